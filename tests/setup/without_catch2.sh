#!/usr/bin/env bash
# Without Catch2 (hidden from find_package, and no download: WORKBOOK_FETCH_DEPENDENCIES=OFF),
# scripts/run-chapters.sh configures, builds and runs the chapters, its configure saying in one
# line that the tests are left out; scripts/run-tests.sh then says in one line how to get them.
# In a copy of the tree, chapter 01 only, PTX of one architecture (short).
#
#   without_catch2.sh SOURCE_DIR
source "$(dirname "$0")/setup_common.sh" "$1"

wb=$setup_work/workbook
setup_copy_tree "$wb"
setup_seed_cache "$wb/build" \
  'WORKBOOK_CHAPTER_FILTER:STRING=^01_' 'CMAKE_CUDA_ARCHITECTURES:STRING=90-virtual' \
  'CMAKE_DISABLE_FIND_PACKAGE_Catch2:BOOL=ON' 'WORKBOOK_FETCH_DEPENDENCIES:BOOL=OFF'
packages=$(setup_python_packages_from_source "$(command -v python3)")

setup_run_as_user "$wb" PYTHONPATH="$packages" -- bash scripts/run-chapters.sh >"$setup_work/chapters.log" 2>&1
status=$?
cat "$setup_work/chapters.log"
((status == 0)) || setup_fail "run-chapters.sh exited $status without Catch2"
left_out=$(grep -c '^-- workbook: the tests are left out' "$setup_work/chapters.log")
((left_out == 1)) || setup_fail "configure said $left_out times that the tests are left out, not once"
grep -q '^-- workbook: the tests are left out.*Catch2 v3 not installed, and WORKBOOK_FETCH_DEPENDENCIES is OFF' "$setup_work/chapters.log" ||
  setup_fail "configure's line does not say that Catch2 v3 is missing and downloads are off"
grep -q '^(01_device_query: passed' "$setup_work/chapters.log" || setup_fail "chapter 01 did not run and pass"
[[ ! -e $wb/build/tests ]] || setup_fail "tests/ was configured without Catch2"

echo
echo "----- scripts/run-tests.sh"
setup_run_as_user "$wb" PYTHONPATH="$packages" -- bash scripts/run-tests.sh >"$setup_work/tests.log" 2>&1
status=$?
cat "$setup_work/tests.log"
((status == 1)) || setup_fail "run-tests.sh exited $status without Catch2, not 1"
last=$(tail -1 "$setup_work/tests.log")
[[ $last == "error: run-tests.sh: no tests to run: Catch2 v3 not installed"*"install Catch2 v3 (apt: "*"CMake then downloads Catch2 "* ]] ||
  setup_fail "run-tests.sh's last line does not say how to get Catch2: $last"
echo "PASS: without Catch2 the chapters build and run; run-tests.sh says in one line how to get it"

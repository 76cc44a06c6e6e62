#!/usr/bin/env bash
# Offline, a library that is not installed cannot be downloaded: for Catch2 (the tests only) the
# chapters configure all the same and one line says the tests are left out and why; for CLI11
# (every chapter) configure stops with one message naming it and its package. "Offline" here is a
# proxy on a closed port of this machine: curl, inside CMake, fails at once, as without a network.
#
#   offline.sh SOURCE_DIR CMAKE
source "$(dirname "$0")/setup_common.sh" "$1"
cmake=$2
offline=(https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9
         HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY= all_proxy= no_proxy= NO_PROXY=)
configure() {  # name -D...: configure chapter 01 into its own folder, with the network cut
  local name=$1
  shift
  env "${offline[@]}" "$cmake" -S "$setup_source" -B "$setup_work/$name" -G Ninja \
    -DWORKBOOK_CHAPTER_FILTER='^01_' -DCMAKE_CUDA_ARCHITECTURES=90-virtual "$@" >"$setup_work/$name.log" 2>&1
}

configure no-catch2 -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON
status=$?
cat "$setup_work/no-catch2.log"
((status == 0)) || setup_fail "configure without Catch2, offline, exited $status: the chapters must configure without it"
lines=$(grep -c '^-- workbook: the tests are left out' "$setup_work/no-catch2.log")
((lines == 1)) || setup_fail "configure said $lines times that the tests are left out, not once"
grep -q '^-- workbook: the tests are left out.*Catch2 v3 not installed, and its download failed (.*): install Catch2 v3' \
  "$setup_work/no-catch2.log" || setup_fail "the line does not say that Catch2's download failed and how to get it"
! compgen -G "$setup_work/no-catch2/_deps/downloads/*.part" >/dev/null || setup_fail "a partial download was left behind"

echo
echo "----- CLI11 hidden, offline"
configure no-cli11 -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON
status=$?
cat "$setup_work/no-cli11.log"
((status != 0)) || setup_fail "configure without CLI11, offline, succeeded"
flat=$(tr -s ' \n' ' ' <"$setup_work/no-cli11.log")
[[ $flat == *"CLI11 not installed, and its download failed ("*"): install libcli11-dev (apt), or configure again online"* ]] ||
  setup_fail "configure's message does not name CLI11, the failed download and libcli11-dev"
echo "PASS: offline, a missing Catch2 leaves the tests out and a missing CLI11 stops configure, each in one message"

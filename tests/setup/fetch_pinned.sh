#!/usr/bin/env bash
# With CLI11, nlohmann-json and Catch2 all hidden from find_package, configure downloads each at
# its pinned release, checks its SHA256 and builds it with the workbook: chapter 01 and Catch2's
# main library build. Where the downloads cannot be made (no route to github.com), skipped with
# the reason configure gave.
#
#   fetch_pinned.sh SOURCE_DIR CMAKE
source "$(dirname "$0")/setup_common.sh" "$1"
cmake=$2
build=$setup_work/build
"$cmake" -S "$setup_source" -B "$build" -G Ninja -DWORKBOOK_CHAPTER_FILTER='^01_' -DCMAKE_CUDA_ARCHITECTURES=90-virtual \
  -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON >"$setup_work/configure.log" 2>&1
status=$?
cat "$setup_work/configure.log"
flat=$(tr -s ' \n' ' ' <"$setup_work/configure.log")
if [[ $flat =~ (CLI11|nlohmann_json|Catch2\ v3)\ not\ installed,\ and\ its\ download\ failed\ \(([^\)]*)\) ]]; then
  setup_skip "${BASH_REMATCH[1]} could not be downloaded here (${BASH_REMATCH[2]}): this test needs a route to github.com"
fi
((status == 0)) || setup_fail "configure exited $status"
for name in CLI11 nlohmann_json Catch2; do
  grep -q "^-- workbook: $name [0-9.]* built here from its pinned release (SHA256 checked)" "$setup_work/configure.log" ||
    setup_fail "configure does not say that $name was downloaded and checked"
done
"$cmake" --build "$build" --target device_query Catch2WithMain >"$setup_work/build.log" 2>&1 ||
  { tail -30 "$setup_work/build.log"; setup_fail "chapter 01 or Catch2 did not build from the downloads"; }
echo "PASS: CLI11, nlohmann-json and Catch2 downloaded at their pinned hashes, and built"

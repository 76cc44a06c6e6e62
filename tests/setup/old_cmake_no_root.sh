#!/usr/bin/env bash
# Ubuntu 22.04 as most clusters and cloud images have it: no root, no sudo, a CMake 3.22 first on
# PATH, python3 without ensurepip (python3-venv not installed). scripts/install-deps.sh puts pip
# and then PyPI's cmake into the workbook's .venv/; chapter 01 then configures (the scripts' own
# workbook_configure), builds and runs with that cmake: the old one is only ever asked its
# version. Chapter 01's lesson program only, PTX of one architecture, in a copy of the tree, as a
# user made for the test (or, not run as root, as the user running it). Needs PyPI: skipped, with
# the reason, where it cannot be reached.
#
#   old_cmake_no_root.sh SOURCE_DIR
source "$(dirname "$0")/setup_common.sh" "$1"

if [[ $(id -u) -eq 0 ]]; then
  setup_make_user || setup_skip "run as root, and no user could be made for the test (useradd and runuser)"
elif sudo -n true 2>/dev/null; then
  setup_skip "$(id -un) has password-less sudo, and only root can make a user without it for this test"
fi
login_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[[ -n $setup_user ]] || login_path=$PATH
python3=$(PATH=$login_path command -v python3) || setup_skip "no python3 on PATH: PyPI's cmake needs it"

# The old CMake: it says its version; any other use is written down, and fails the test.
fakes=$setup_work/old-tools
mkdir -p "$fakes" "$setup_work/no-ensurepip/ensurepip"
cat >"$fakes/cmake" <<FAKE
#!/bin/sh
if [ "\$1" = --version ]; then printf 'cmake version 3.22.1\n\nCMake suite maintained and supported by Kitware (kitware.com/cmake).\n'; exit 0; fi
echo "cmake \$*" >>"$setup_work/old-cmake-used.log"
echo "CMake Error: CMake 3.22.1 (this test's old cmake) was asked to: \$*" >&2
exit 1
FAKE
# python3 without ensurepip, as Debian's and Ubuntu's are without python3-venv.
echo 'raise ImportError("No module named ensurepip (python3-venv is not installed)")' \
  >"$setup_work/no-ensurepip/ensurepip/__init__.py"
cat >"$fakes/python3" <<FAKE
#!/bin/sh
PYTHONPATH="$setup_work/no-ensurepip\${PYTHONPATH:+:\$PYTHONPATH}" exec "$python3" "\$@"
FAKE
chmod 755 "$fakes/cmake" "$fakes/python3"
chmod -R a+rX "$setup_work/no-ensurepip"

wb=$setup_work/workbook
setup_copy_tree "$wb"
setup_seed_cache "$wb/build" 'WORKBOOK_CHAPTER_FILTER:STRING=^01_' 'CMAKE_CUDA_ARCHITECTURES:STRING=90-virtual'
[[ -z $setup_user ]] || chown -R "$setup_user:" "$wb"
packages=$(setup_python_packages_from_source "$python3")

setup_run_as_user "$wb" PATH="$fakes:$login_path" PYTHONPATH="$packages" -- bash scripts/install-deps.sh >"$setup_work/run.log" 2>&1
status=$?
if ((status != 0)) && grep -qE 'could not install .* into \.venv/ \(offline\?\)|urlopen error|Could not fetch URL|could not be made for PyPI' "$setup_work/run.log"; then
  setup_skip "PyPI cannot be reached from here: $(grep -m1 -E 'error|Error' "$setup_work/run.log")"
fi
((status == 0)) || { cat "$setup_work/run.log"; setup_fail "install-deps.sh exited $status"; }
echo "----- chapter 01, configured, built and run as the scripts do" >>"$setup_work/run.log"
setup_run_as_user "$wb" PATH="$fakes:$login_path" -- bash -c \
  'source scripts/env.sh && workbook_configure && cmake --build --preset default --target device_query && build/01_device_query/device_query' \
  >>"$setup_work/run.log" 2>&1
status=$?
grep -vE '^\[[0-9]+/[0-9]+\] ' "$setup_work/run.log"
((status == 0)) || setup_fail "configure, build or run of chapter 01 exited $status"
grep -q '^python3 has no ensurepip (python3-venv is not installed): .venv/ gets pip ' "$setup_work/run.log" ||
  setup_fail "install-deps.sh did not say that pip comes from PyPI"
compgen -G "$wb/.venv/lib/python3*/site-packages/pip-*.dist-info" >/dev/null || setup_fail "no pip in .venv/"
grep -q '^Installing into .venv/ from PyPI (CMake 3.22.1 is older than 3.24' "$setup_work/run.log" ||
  setup_fail "install-deps.sh did not say that PyPI's cmake replaces 3.22.1"
[[ -x $wb/.venv/bin/cmake && -L $wb/.venv/tools/cmake ]] || setup_fail "PyPI's cmake is not in .venv/ and .venv/tools/"
version=$("$wb/.venv/tools/cmake" --version | awk 'NR == 1 { print $3 }')
[[ $(printf '%s\n' 3.24 "$version" | sort -V | head -1) == 3.24 ]] || setup_fail ".venv/'s cmake is $version, older than 3.24"
grep -q "^CMAKE_COMMAND:INTERNAL=$wb/.venv/" "$wb/build/CMakeCache.txt" ||
  setup_fail "the build was not configured by .venv/'s cmake: $(grep '^CMAKE_COMMAND:' "$wb/build/CMakeCache.txt")"
[[ ! -e $setup_work/old-cmake-used.log ]] || setup_fail "the old cmake was used: $(cat "$setup_work/old-cmake-used.log")"
[[ $(tail -1 "$setup_work/run.log") == PASS ]] || setup_fail "chapter 01 did not run and pass"
echo "PASS: without root, PyPI's cmake $version in .venv/ replaced CMake 3.22.1, and chapter 01 built and ran with it"

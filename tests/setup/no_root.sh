#!/usr/bin/env bash
# As a user without root and without sudo (one made for the test; or, not run as root, the user
# running it), scripts/install-deps.sh succeeds and writes nothing outside the workbook's own
# folders, and chapter 01 configures. In a copy of the tree.
#
#   no_root.sh SOURCE_DIR
source "$(dirname "$0")/setup_common.sh" "$1"

if [[ $(id -u) -eq 0 ]]; then
  setup_make_user || setup_skip "run as root, and no user could be made for the test (useradd and runuser)"
elif sudo -n true 2>/dev/null; then
  setup_skip "$(id -un) has password-less sudo, and only root can make a user without it for this test"
fi
wb=$setup_work/workbook
setup_copy_tree "$wb"
[[ -z $setup_user ]] || chown -R "$setup_user:" "$wb"
python3=$(command -v python3)
[[ -z $setup_user ]] || python3=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v python3)
packages=$(setup_python_packages_from_source "$python3")

setup_run_as_user "$wb" PYTHONPATH="$packages" -- bash scripts/install-deps.sh >"$setup_work/deps.log" 2>&1
status=$?
cat "$setup_work/deps.log"
((status == 0)) || setup_fail "install-deps.sh exited $status without root"
! grep -qiE 'sudo|apt-get|Installing with apt' "$setup_work/deps.log" || setup_fail "install-deps.sh asked for apt or sudo without root"
if [[ -n $setup_user ]]; then
  # Every file the new user owns was made by this test: none may be outside its folder.
  outside=$(find / /tmp /var/tmp /dev/shm -xdev \( -path /proc -o -path "$setup_work" \) -prune -o -user "$setup_user" -print 2>/dev/null | head -5)
  [[ -z $outside ]] || setup_fail "install-deps.sh wrote outside the workbook: $outside"
fi

echo
echo "----- configure chapter 01"
setup_run_as_user "$wb" -- bash -c 'source scripts/env.sh && cmake --preset default -DWORKBOOK_CHAPTER_FILTER=^01_ -DCMAKE_CUDA_ARCHITECTURES=90-virtual' \
  >"$setup_work/configure.log" 2>&1
status=$?
grep -E '^-- workbook:|Error|error' "$setup_work/configure.log"
((status == 0)) || { cat "$setup_work/configure.log"; setup_fail "configure of chapter 01 exited $status without root"; }
grep -q '^-- workbook: CUDA ' "$setup_work/configure.log" || setup_fail "configure printed no summary"
echo "PASS: without root, install-deps.sh installed nothing outside the workbook, and chapter 01 configured"

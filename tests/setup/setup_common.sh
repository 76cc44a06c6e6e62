# setup_common.sh: sourced by the set-up tests in this folder (label setup). Each works in a copy
# of the workbook in a folder of its own, so that what it installs (.venv/, a build folder) never
# touches the tree under test, and cleans up after itself.
#
#   source setup_common.sh SOURCE_DIR     then: setup_copy_tree, setup_seed_cache, setup_run_as_user, ...
set -uo pipefail

setup_source=$1
setup_work=$(mktemp -d "${TMPDIR:-/tmp}/workbook-setup.XXXXXX")
chmod 755 "$setup_work"  # a user made for a test reaches its copy through here
setup_tmp=$setup_work/tmp  # TMPDIR of the commands run: what they leave there goes with the rest
mkdir -p "$setup_tmp"
setup_user=
setup_cleanup() {
  if [[ -n $setup_user ]]; then
    userdel "$setup_user" 2>/dev/null || userdel -f "$setup_user" 2>/dev/null || true
  fi
  rm -rf "$setup_work"
}
trap setup_cleanup EXIT

setup_fail() { echo "FAIL: $*"; exit 1; }
setup_skip() { echo "skipped: $*"; exit 77; }

# setup_copy_tree DEST: the workbook as a reader has it: the files git tracks or would track (no
# build folders, no .venv/), copied from the tree under test, uncommitted changes included; from a
# tree that is not a git checkout (an unpacked archive), everything but those.
setup_copy_tree() {
  local dest=$1
  mkdir -p "$dest"
  if git -C "$setup_source" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$setup_source" && git ls-files -z --cached --others --exclude-standard |
       while IFS= read -r -d '' file; do [[ -f $file ]] && printf '%s\0' "$file"; done |
       tar --null -T - -cf -) | tar -xf - -C "$dest"
  else
    tar -C "$setup_source" --exclude=./.git --exclude=./.venv --exclude=./build --exclude='./build-*' \
      --exclude=./results --exclude=./.device-out --exclude=__pycache__ -cf - . | tar -xf - -C "$dest"
  fi || setup_fail "could not copy $setup_source to $dest"
}

# setup_seed_cache BUILD_DIR NAME:TYPE=VALUE...: a build folder whose first configure, by the
# scripts' own `cmake --preset default`, starts from these cache entries (one chapter, one
# architecture: the test stays short), as a reader's -D options would.
setup_seed_cache() {
  local dir=$1
  shift
  mkdir -p "$dir"
  printf '%s\n' "$@" >"$dir/CMakeCache.txt"
}

# setup_python_packages_from_source PYTHON3: the plots' packages (numpy, matplotlib, Jinja2) as the tree
# under test has them in its .venv/, for PYTHONPATH, so that a copy's install-deps.sh finds them
# instead of downloading them again (they are not what these tests test). Prints a folder that
# links them, and not pip, setuptools, cmake or ninja (which are); nothing where that .venv/ lacks
# them or its Python is not the X.Y of PYTHON3, the python3 the copy's install-deps.sh will run.
setup_python_packages_from_source() {
  local python=$setup_source/.venv/bin/python3 site entry version='import sys; print(sys.version_info[:2])'
  [[ -x $python ]] || return 0
  [[ $("$python" -c "$version" 2>/dev/null) == $("$1" -c "$version" 2>/dev/null) ]] || return 0
  "$python" -c 'import numpy, matplotlib' 2>/dev/null || return 0
  site=$("$python" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))') || return 0
  mkdir -p "$setup_work/python-packages"
  for entry in "$site"/*; do
    case ${entry##*/} in
      pip|pip-*|setuptools|setuptools-*|_distutils_hack|*.pth|cmake|cmake-*|ninja|ninja-*|__pycache__) ;;
      *) ln -s "$entry" "$setup_work/python-packages/" ;;
    esac
  done
  echo "$setup_work/python-packages"
}

# setup_make_user: a user without root and without sudo, made for this test (root only), with a
# home in the test's folder. Sets setup_user and setup_home.
setup_make_user() {
  [[ $(id -u) -eq 0 ]] || return 1
  command -v useradd >/dev/null && command -v runuser >/dev/null || return 1
  setup_user=wbsetup$$
  setup_home=$setup_work/home
  mkdir -p "$setup_home"
  useradd --no-create-home --home-dir "$setup_home" --shell /bin/bash "$setup_user" ||
    { setup_user=; return 1; }
  chown "$setup_user:" "$setup_home" "$setup_tmp"
  if runuser -u "$setup_user" -- sudo -n true >/dev/null 2>&1; then
    setup_fail "the user made for this test, $setup_user, can use sudo"
  fi
}

# setup_run_as_user DIR [VAR=VALUE...] -- COMMAND...: COMMAND in DIR, as the test's user when one
# was made (else as whoever runs the test, not root), with a clean environment: HOME, PATH, LANG,
# TMPDIR (the test's) and the network's settings (proxies, pip's index and certificates), plus the
# VAR=VALUEs given.
setup_run_as_user() {
  local dir=$1
  shift
  # A user made here starts with the PATH a login gives; anyone else keeps their own.
  local path=$PATH
  [[ -n $setup_user ]] && path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  local env=(HOME="${setup_home:-$HOME}" LANG=C.UTF-8 PATH="$path" TMPDIR="$setup_tmp")
  local name
  for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL \
              PIP_EXTRA_INDEX_URL PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
    [[ -n ${!name:-} ]] && env+=("$name=${!name}")
  done
  while (($# > 0)) && [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  if [[ -n $setup_user ]]; then
    (cd "$dir" && runuser -u "$setup_user" -- env -i "${env[@]}" "$@")
  else
    (cd "$dir" && env -i "${env[@]}" "$@")
  fi
}

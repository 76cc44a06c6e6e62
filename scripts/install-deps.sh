#!/usr/bin/env bash
# install-deps.sh: make sure the build dependencies are present; install the missing ones with apt
# on Debian/Ubuntu (Catch2 v3 from bookworm-backports on Debian 12), or print the exact command;
# ccache too where apt can run (wanted, not needed: one test is faster with it, tried once);
# then the Python packages of the plots (numpy, matplotlib) and of the pages' templates (Jinja2) into
# the workbook's own virtual environment, .venv/, from PyPI, without root.
#
#   scripts/install-deps.sh          (run-chapters.sh and run-tests.sh call it first)
#
# Exits 0 when everything is there, 1 with a message when something is missing and cannot be
# installed from here. Installs nothing that is already present.
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if (($# > 0)); then
  echo "error: install-deps.sh takes no arguments, got '$1' (see scripts/install-deps.sh --help)" >&2
  exit 2
fi
source "$(dirname "$0")/env.sh"

have_cmake_package() {  # name: is <name>Config.cmake (or <lowercase>-config.cmake) installed?
  local name=$1 dir
  for dir in /usr/lib/cmake /usr/share/cmake /usr/local/lib/cmake /usr/local/share/cmake \
             /usr/lib/x86_64-linux-gnu/cmake /usr/lib/aarch64-linux-gnu/cmake /usr/share \
             ${CMAKE_PREFIX_PATH:+${CMAKE_PREFIX_PATH//:/ }}; do
    [[ -d $dir ]] || continue
    if find "$dir" -maxdepth 4 \( -name "${name}Config.cmake" -o -name "${name,,}-config.cmake" \) \
         2>/dev/null | grep -q .; then
      return 0
    fi
  done
  return 1
}

catch2_major() {  # prints the major version of the installed Catch2 CMake package, or nothing
  find /usr /usr/local ${CMAKE_PREFIX_PATH:+${CMAKE_PREFIX_PATH//:/ }} -maxdepth 6 -name 'Catch2ConfigVersion.cmake' 2>/dev/null |
    head -1 | xargs -r grep -m1 -oE 'PACKAGE_VERSION "[0-9]+' | grep -oE '[0-9]+$' || true
}

version_at_least() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }

missing=()       # apt packages to install
backports=()     # apt packages that come from bookworm-backports (Debian 12)
problems=()      # things apt cannot fix

cmake_version=
if command -v cmake >/dev/null; then cmake_version=$(cmake --version | awk 'NR==1 {print $3}'); fi
if [[ -z $cmake_version ]]; then missing+=(cmake)
elif ! version_at_least "$cmake_version" 3.24; then problems+=("CMake $cmake_version is too old: 3.24 or newer is needed (pip install cmake)")
fi
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
if ! command -v nvcc >/dev/null; then
  problems+=("nvcc not found: install the CUDA toolkit 12.0 or newer (it lives in /usr/local/cuda/bin)")
fi
# Wanted, not needed: installed with the rest, or alone where apt can run; without it only the
# test that builds the READMEs' nvcc lines is slower (it compiles common/ once per line).
wanted=()
command -v ccache >/dev/null || wanted+=(ccache)
have_cmake_package CLI11 || missing+=(libcli11-dev)
have_cmake_package nlohmann_json || missing+=(nlohmann-json3-dev)

catch2=$(catch2_major)
if [[ -z $catch2 || $catch2 -lt 3 ]]; then
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  if [[ $codename == bookworm ]]; then backports+=(libcatch2-dev)
  elif [[ $codename == bullseye || $codename == jammy || $codename == focal ]]; then
    problems+=("Catch2 v3 is not packaged for $codename: build it from source (cmake -S Catch2 -B b && cmake --build b --target install)")
  else missing+=(catch2)
  fi
fi

# The plots' packages (requirements-plots.txt) and the pages' template engine, Jinja2, go into
# a virtual environment of the workbook's own, .venv/ (ignored by git): no root needed, and the
# system's Python is left as it is. It sees the system's packages too (torch, where installed: its
# build must match the driver, so the workbook never installs it). The tests run the scripts with
# its Python, and a script started with another python3 moves to it (common/workbook_needs.py).
readonly jinja2_version=3.1.6  # the one installed where none is; any Jinja2 3 renders the same pages
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
install_python_tools() {
  local venv=$workbook_root/.venv
  if ! grep -qs '^include-system-site-packages = true' "$venv/pyvenv.cfg" || [[ ! -x $venv/bin/python3 ]]; then
    # Made, or made again over one that did not see the system's packages: what is installed in
    # it stays.
    python3 -m venv --system-site-packages "$venv" >/dev/null ||
      { echo "warning: could not make .venv/ (python3 -m venv --system-site-packages .venv); the plot and docs tests will be skipped" >&2; return 0; }
  fi
  # --system-site-packages means the base interpreter's: when python3 is itself a virtual or conda
  # environment (torch is often installed in one), .venv/ would not see that environment's
  # packages. A .pth line for each package folder python3 reads, in its order, puts them back,
  # after .venv/'s own.
  local site_packages
  site_packages=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null) || site_packages=
  if [[ -d $site_packages ]]; then
    python3 -c 'import sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
      >"$site_packages/workbook-python3-packages.pth" 2>/dev/null || rm -f "$site_packages/workbook-python3-packages.pth"
  fi
  if "$venv/bin/python" -c 'import numpy, matplotlib, jinja2, sys; sys.exit(jinja2.__version__ < "3")' 2>/dev/null; then
    return 0
  fi
  echo "Installing numpy, matplotlib and Jinja2 into .venv/ (the plots, the pages' templates)"
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "jinja2==$jinja2_version" \
       -r "$workbook_root/requirements-plots.txt" >/dev/null; then
    # Only the plot and docs tests need them (they skip without): the chapters build and run all the same.
    echo "warning: could not install them into .venv/ (.venv/bin/pip install jinja2==$jinja2_version -r requirements-plots.txt); the plot and docs tests will be skipped" >&2
    return 0
  fi
}

if ((${#problems[@]})); then
  printf 'error: %s\n' "${problems[@]}" >&2
  exit 1
fi
# How a command runs as root here: directly, through password-less sudo, or not at all.
as_root=()
can_be_root=true
if [[ $(id -u) -ne 0 ]]; then
  if sudo -n true 2>/dev/null; then as_root=(sudo -n); else can_be_root=false; fi
fi
if ((${#missing[@]} + ${#backports[@]} == 0)); then
  # Tried once (the marker is in build/, so a fresh build tries again): an offline machine would
  # otherwise wait on apt at every run. No prompt can stop it: stdin is closed, and the frontend
  # and needrestart are told so inside sudo, which drops the caller's environment.
  tried=$workbook_build_dir/.ccache-install-tried
  if ((${#wanted[@]})) && [[ ! -e $tried ]] && command -v apt-get >/dev/null && $can_be_root; then
    echo "Installing: ${wanted[*]} (wanted: the README nvcc test compiles common/*.cpp once, not once per line)"
    # From the package lists already there (no apt-get update: a full set-up runs that).
    if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a apt-get -o Acquire::http::Timeout=10 \
         -o Acquire::Retries=0 install -y "${wanted[@]}" </dev/null >/dev/null 2>&1; then
      echo "note: could not install ${wanted[*]} (apt-get install ${wanted[*]}); everything works without it, one test slower"
      mkdir -p "$workbook_build_dir" && touch "$tried"
    fi
  fi
  install_python_tools
  exit
fi

backports_list=/etc/apt/sources.list.d/workbook-bookworm-backports.list
commands=("apt-get update")
if ((${#backports[@]})); then
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    commands=("echo 'deb http://deb.debian.org/debian bookworm-backports main' > $backports_list" "${commands[@]}")
  fi
  commands+=("DEBIAN_FRONTEND=noninteractive apt-get install -y -t bookworm-backports ${backports[*]}")
fi
if ((${#missing[@]})); then
  commands+=("DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}")
fi

if ! command -v apt-get >/dev/null; then
  echo "error: missing ${missing[*]} ${backports[*]}; install them with your package manager" >&2
  exit 1
fi
if ! $can_be_root; then
  echo "error: missing packages; run these as root, then try again:" >&2
  printf '  sudo sh -c "%s"\n' "${commands[@]}" >&2
  exit 1
fi
run_as_root=("${as_root[@]}" bash -c)
if ((${#wanted[@]})); then
  commands+=("DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a apt-get install -y ${wanted[*]} </dev/null || echo 'note: could not install ${wanted[*]}' >&2")
fi
to_install=("${backports[@]}" "${missing[@]}" "${wanted[@]}")
echo "Installing: ${to_install[*]}"
for command in "${commands[@]}"; do
  "${run_as_root[@]}" "$command" >/dev/null
done
install_python_tools

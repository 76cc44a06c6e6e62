#!/usr/bin/env bash
# install-deps.sh: make sure the workbook can be built here, on Debian 12 and 13 and Ubuntu 22.04
# and 24.04, with root or without. run-chapters.sh and run-tests.sh call it first.
#
# Only the system can give the CUDA toolkit (nvcc, looked for in /usr/local/cuda/bin too) and a
# C++ compiler (g++): without them it stops, with one line saying what to install.
# As root, or with password-less sudo, apt installs what the release has: CMake 3.24 or newer,
# Ninja, CLI11, nlohmann-json, Catch2 v3 (Debian 12: from bookworm-backports), g++, python3-venv,
# and ccache (wanted, not needed: one test is faster with it).
# Without root it installs nothing system-wide; what apt could not give goes into the workbook's
# own folders: a CMake of 3.24 or newer (Ubuntu 22.04 has 3.22) and Ninja from PyPI into .venv/
# (scripts/env.sh puts them first on PATH), and CLI11, nlohmann-json and Catch2 v3 are downloaded
# by CMake at configure, each at a pinned release with its SHA256 checked. Catch2 is for the tests
# only: the chapters build and run without it.
# Always: numpy, matplotlib (the plots) and Jinja2 (the pages' templates) into .venv/ from PyPI.
#
#   scripts/install-deps.sh
#
# Exits 0 when the build can start; 1 with one line when nvcc or g++ is missing, or no CMake 3.24
# can be had; 2 for bad usage. Installs nothing that is already present.
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if (($# > 0)); then
  echo "error: install-deps.sh takes no arguments, got '$1' (see scripts/install-deps.sh --help)" >&2
  exit 2
fi
source "$(dirname "$0")/env.sh"

# What PyPI gives where the system cannot (pinned: the same tools on every machine).
readonly cmake_pypi=cmake==3.31.10 ninja_pypi=ninja==1.11.1.4
# pip itself, for a .venv/ made where python3 has no ensurepip (python3-venv not installed, no
# root to install it): PyPI's wheel, its SHA256 as PyPI publishes it. Any Python from 3.8 on.
readonly pip_wheel_version=24.3.1
readonly pip_wheel_url=https://files.pythonhosted.org/packages/ef/7d/500c9ad20238fcfcb4cb9243eede163594d7020ce87bd9610c9e02771876/pip-24.3.1-py3-none-any.whl
readonly pip_wheel_sha256=3790624780082365f47549d032f3770eeb2b1e8bd1f7b2e02dace1afa361b4ed
readonly jinja2_version=3.1.6  # the one installed where none is; any Jinja2 3 renders the same pages
venv=$workbook_root/.venv

version_at_least() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }

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

cmake_version() {  # the version of the cmake first on PATH, or nothing
  command -v cmake >/dev/null || return 0
  cmake --version 2>/dev/null | awk 'NR == 1 { print $3 }' || true
}
cmake_good() { local v; v=$(cmake_version); [[ -n $v ]] && version_at_least "$v" 3.24; }
has_ensurepip() { python3 -c 'import venv, ensurepip' 2>/dev/null; }

# ---- What only the system can give: the toolkit and a C++ compiler.
if ! command -v nvcc >/dev/null; then
  echo "error: nvcc not found: install the CUDA toolkit 13 (NVIDIA's packages put it in /usr/local/cuda/bin, which is looked in too), then run this again" >&2
  exit 1
fi
nvcc_release=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)
if [[ -n $nvcc_release ]] && ! version_at_least "$nvcc_release" 13.0; then
  echo "error: $(command -v nvcc) is CUDA $nvcc_release: the workbook needs CUDA 13.0 or newer (chapter 04's cudaMemcpyBatchAsync takes CUDA 13's arguments); install it, or PyPI's nvidia-cuda-nvcc (see README.md), then run this again" >&2
  exit 1
fi

# ---- How a command runs as root here: directly, through password-less sudo, or not at all.
as_root=()
can_be_root=true
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then as_root=(sudo -n); else can_be_root=false; fi
fi
use_apt=false
if $can_be_root && command -v apt-get >/dev/null; then use_apt=true; fi
codename=$( (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true)

if ! command -v g++ >/dev/null && ! $use_apt; then
  echo "error: g++ not found: nvcc needs a C++ compiler beside it; install g++ (as root: apt-get install g++), then run this again" >&2
  exit 1
fi

# ---- apt, where this can be root: what the release has.
apt_as_root() { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a "$@" </dev/null; }
apt_candidate_major() {  # package: the major version apt would install, or nothing
  apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" { sub(/^[0-9]+:/, "", $2); split($2, v, "."); print v[1]; exit }'
}
apt_candidate_at_least() {  # package version: would apt install that version or newer?
  local candidate
  candidate=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" { sub(/^[0-9]+:/, "", $2); print $2; exit }')
  [[ -n $candidate ]] && version_at_least "$candidate" "$2"
}

if $use_apt; then
  apt_packages=()   # from the release
  backports=()      # from bookworm-backports (Debian 12)
  command -v g++ >/dev/null || apt_packages+=(g++)
  # CMake 3.24 or newer: Debian 12 has 3.25, Debian 13 3.31, Ubuntu 24.04 3.28; Ubuntu 22.04's
  # 3.22 is too old (PyPI's, below). Other releases: whatever apt offers, if new enough.
  if ! cmake_good; then
    case $codename in
      jammy|focal|bullseye) ;;
      bookworm|trixie|noble) apt_packages+=(cmake) ;;
      *) apt_candidate_at_least cmake 3.24 && apt_packages+=(cmake) ;;
    esac
  fi
  command -v ninja >/dev/null || apt_packages+=(ninja-build)
  have_cmake_package CLI11 || apt_packages+=(libcli11-dev)
  have_cmake_package nlohmann_json || apt_packages+=(nlohmann-json3-dev)
  catch2=$(catch2_major)
  if [[ -z $catch2 || $catch2 -lt 3 ]]; then
    # Catch2 v3: Debian 12 in bookworm-backports, Debian 13 as libcatch2-dev, Ubuntu 24.04 as
    # catch2; Ubuntu 22.04 has only v2 (CMake downloads v3 at configure, for the tests).
    case $codename in
      bookworm) backports+=(libcatch2-dev) ;;
      trixie) apt_packages+=(libcatch2-dev) ;;
      noble) apt_packages+=(catch2) ;;
      jammy|focal|bullseye) ;;
      *) for package in libcatch2-dev catch2; do
           if [[ $(apt_candidate_major "$package") -ge 3 ]] 2>/dev/null; then apt_packages+=("$package"); break; fi
         done ;;
    esac
  fi
  has_ensurepip || apt_packages+=(python3-venv)
  wanted=()
  command -v ccache >/dev/null || wanted+=(ccache)

  if ((${#apt_packages[@]} + ${#backports[@]})); then
    if ((${#backports[@]})) && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      apt_as_root sh -c "echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/workbook-bookworm-backports.list"
    fi
    echo "Installing with apt: ${backports[*]} ${apt_packages[*]} ${wanted[*]}" | tr -s ' '
    apt_as_root apt-get -o Acquire::http::Timeout=20 update >/dev/null 2>&1 ||
      echo "note: apt-get update failed; trying with the package lists already here"
    failed=()
    if ((${#backports[@]})); then
      apt_as_root apt-get install -y -t bookworm-backports "${backports[@]}" >/dev/null 2>&1 || failed+=("${backports[@]}")
    fi
    if ((${#apt_packages[@]})) && ! apt_as_root apt-get install -y "${apt_packages[@]}" >/dev/null 2>&1; then
      # apt installs all or none: one at a time, so that one it lacks keeps none of the others out.
      for package in "${apt_packages[@]}"; do
        apt_as_root apt-get install -y "$package" >/dev/null 2>&1 || failed+=("$package")
      done
    fi
    if ((${#wanted[@]})); then
      apt_as_root apt-get install -y "${wanted[@]}" >/dev/null 2>&1 || true
    fi
    if ((${#failed[@]})); then
      echo "note: apt could not install ${failed[*]}; going on without (what can come from PyPI or a download at configure will)"
    fi
  elif ((${#wanted[@]})); then
    # Alone, tried once (the marker is in build/, so a fresh build tries again): an offline
    # machine would otherwise wait on apt at every run. From the package lists already there.
    tried=$workbook_build_dir/.ccache-install-tried
    if [[ ! -e $tried ]]; then
      echo "Installing with apt: ${wanted[*]} (wanted: the README nvcc test compiles common/*.cpp once, not once per line)"
      if ! apt_as_root apt-get -o Acquire::http::Timeout=10 -o Acquire::Retries=0 install -y "${wanted[@]}" >/dev/null 2>&1; then
        echo "note: could not install ${wanted[*]} (apt-get install ${wanted[*]}); everything works without it, one test slower"
        mkdir -p "$workbook_build_dir" && touch "$tried"
      fi
    fi
  fi
  hash -r
  if ! command -v g++ >/dev/null; then
    echo "error: g++ not found, and apt could not install it: nvcc needs a C++ compiler beside it; install g++, then run this again" >&2
    exit 1
  fi
fi

# ---- The workbook's own .venv/: PyPI's CMake and Ninja where the system's will not do, and the
# plots' and pages' packages. It sees the system's packages too (torch, where installed: its
# build must match the driver, so the workbook never installs it). No root needed.
pypi_tools=()
reasons=()  # why they are needed, for the lines below
if ! cmake_good; then
  pypi_tools+=("$cmake_pypi")
  found=$(cmake_version)
  if [[ -n $found ]]; then reasons+=("CMake $found is older than 3.24"); else reasons+=("no CMake"); fi
fi
if ! command -v ninja >/dev/null; then pypi_tools+=("$ninja_pypi"); reasons+=("no Ninja"); fi
why=
if ((${#reasons[@]})); then printf -v why '%s and ' "${reasons[@]}"; why=${why% and }; fi
if ! command -v python3 >/dev/null; then
  if ((${#pypi_tools[@]})); then
    echo "error: $why, apt cannot give one here, and python3 (for PyPI's) is missing: install CMake 3.24 or newer and Ninja, or python3" >&2
    exit 1
  fi
  echo "warning: python3 not found: the plot and docs tests will be skipped" >&2
  exit 0
fi

bootstrap_pip() {  # pip into a .venv/ made without it, from PyPI's wheel, its hash checked
  local wheel
  wheel=$(mktemp -d)/pip-$pip_wheel_version-py3-none-any.whl
  "$venv/bin/python" - "$pip_wheel_url" "$pip_wheel_sha256" "$wheel" <<'EOF' || return 1
import hashlib, sys, urllib.request
url, sha256, path = sys.argv[1:]
data = urllib.request.urlopen(url, timeout=120).read()
if hashlib.sha256(data).hexdigest() != sha256:
    sys.exit(f"{url}: SHA256 {hashlib.sha256(data).hexdigest()}, not the pinned {sha256}")
open(path, "wb").write(data)
EOF
  "$venv/bin/python" "$wheel/pip" install -q --no-cache-dir --disable-pip-version-check --no-index "$wheel" >/dev/null
  local status=$?
  rm -rf "$(dirname "$wheel")"
  return $status
}

make_venv() {
  if grep -qs '^include-system-site-packages = true' "$venv/pyvenv.cfg" && [[ -x $venv/bin/python3 ]] &&
     "$venv/bin/python3" -m pip --version >/dev/null 2>&1; then
    return 0
  fi
  # Made, or made again over one that did not see the system's packages: what is installed in it
  # stays. Where python3 has no ensurepip (Debian's and Ubuntu's without python3-venv, which
  # needs root to install), made without pip, which then comes from PyPI.
  if has_ensurepip; then
    python3 -m venv --system-site-packages "$venv" >/dev/null 2>&1
  else
    echo "python3 has no ensurepip (python3-venv is not installed): .venv/ gets pip $pip_wheel_version from PyPI"
    python3 -m venv --without-pip --system-site-packages "$venv" >/dev/null 2>&1 && bootstrap_pip
  fi
}

venv_made=true
make_venv || venv_made=false

if ((${#pypi_tools[@]})); then
  if ! $venv_made; then
    echo "error: $why, and .venv/ could not be made for PyPI's (python3 -m venv .venv): install CMake 3.24 or newer and Ninja" >&2
    exit 1
  fi
  echo "Installing into .venv/ from PyPI ($why, and apt cannot give one here): ${pypi_tools[*]}"
  if ! "$venv/bin/python3" -m pip install -q --no-cache-dir --disable-pip-version-check --only-binary=:all: "${pypi_tools[@]}" >/dev/null; then
    echo "error: $why, and pip could not install ${pypi_tools[*]} into .venv/ (offline?): install CMake 3.24 or newer and Ninja" >&2
    exit 1
  fi
  mkdir -p "$workbook_tools_dir"
  for tool in cmake ctest cpack ninja; do
    [[ -x $venv/bin/$tool ]] && ln -sfn "../bin/$tool" "$workbook_tools_dir/$tool"
  done
  workbook_use_tools
  if ! cmake_good; then
    echo "error: PyPI's cmake in .venv/ does not run here ($workbook_tools_dir/cmake --version): install CMake 3.24 or newer" >&2
    exit 1
  fi
fi

# CLI11, nlohmann-json and Catch2 v3 that apt did not give: downloaded at configure.
to_download=()
have_cmake_package CLI11 || to_download+=(CLI11)
have_cmake_package nlohmann_json || to_download+=(nlohmann-json)
catch2=$(catch2_major)
[[ -n $catch2 && $catch2 -ge 3 ]] || to_download+=("Catch2 v3 (for the tests only)")
if ((${#to_download[@]})); then
  printf -v list '%s, ' "${to_download[@]}"
  echo "Not installed here: ${list%, }: configure downloads their pinned releases, SHA256 checked (cmake/WorkbookDependencies.cmake)"
fi

# The plots' packages (requirements-plots.txt) and the pages' template engine, Jinja2. The tests
# run the scripts with .venv/'s Python, and a script started with another python3 moves to it
# (common/workbook_needs.py).
install_python_packages() {
  if ! $venv_made; then
    echo "warning: could not make .venv/ (python3 -m venv --system-site-packages .venv); the plot and docs tests will be skipped" >&2
    return 0
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
  if ! "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check "jinja2==$jinja2_version" \
       -r "$workbook_root/requirements-plots.txt" >/dev/null; then
    # Only the plot and docs tests need them (they skip without): the chapters build and run all the same.
    echo "warning: could not install them into .venv/ (.venv/bin/pip install jinja2==$jinja2_version -r requirements-plots.txt); the plot and docs tests will be skipped" >&2
  fi
}
install_python_packages

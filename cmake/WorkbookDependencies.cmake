# Finds what every chapter needs, and Catch2 for the tests. Each library is looked for with
# find_package first (the system's, installed by scripts/install-deps.sh where apt can); where
# none is found, it is downloaded at a pinned release, its SHA256 checked, and built with the
# workbook (FetchContent), so a reader online needs nothing else, root or not. Offline, one line
# says what is missing. Catch2 is for the tests only: without it the chapters build and run, the
# tests are left out, and WORKBOOK_TESTS_LEFT_OUT says why (scripts/run-tests.sh prints it).

include(FetchContent)

option(WORKBOOK_FETCH_DEPENDENCIES
       "Download CLI11, nlohmann-json and Catch2 (pinned releases, SHA256 checked) where find_package finds none" ON)
set(WORKBOOK_DOWNLOAD_DIR "${PROJECT_BINARY_DIR}/_deps/downloads" CACHE PATH
    "Where the downloaded archives are kept (offline: put them here by hand, under the names the message gives)")

# The pinned releases: name, version, archive, its SHA256 (as published with the release's
# packages: Homebrew, spack, Debian's orig tarballs), and the package a reader installs instead.
set(workbook_pinned_CLI11
    2.4.1 "https://github.com/CLIUtils/CLI11/archive/refs/tags/v2.4.1.tar.gz"
    73b7ec52261ce8fe980a29df6b4ceb66243bb0b779451dbd3d014cfec9fdbb58 "libcli11-dev (apt)")
set(workbook_pinned_nlohmann_json
    3.11.3 "https://github.com/nlohmann/json/archive/refs/tags/v3.11.3.tar.gz"
    0d8ef5af7f9794e3263480193c491549b2ba6cc74bb018906202ada498a79406 "nlohmann-json3-dev (apt)")
set(workbook_pinned_Catch2
    3.7.1 "https://github.com/catchorg/Catch2/archive/refs/tags/v3.7.1.tar.gz"
    c991b247a1a0d7bb9c39aa35faf0fe9e19764213f28ffba3109388e62ee0269c
    "Catch2 v3 (apt: libcatch2-dev on Debian 13, from bookworm-backports on Debian 12, catch2 on Ubuntu 24.04)")

# workbook_fetch(<name> <found_var> <why_var>): the pinned release of <name>, downloaded into
# WORKBOOK_DOWNLOAD_DIR (once: a kept archive whose hash matches is used again), then made
# available with FetchContent at the same URL hash. <found_var> is set TRUE, or FALSE with, in
# <why_var>, why and what the reader can do. A macro: the library's variables reach the caller.
macro(workbook_fetch name found_var why_var)
  list(GET workbook_pinned_${name} 0 _wb_version)
  list(GET workbook_pinned_${name} 1 _wb_url)
  list(GET workbook_pinned_${name} 2 _wb_sha256)
  string(REGEX REPLACE "^.*/" "" _wb_file "${_wb_url}")
  set(_wb_archive "${WORKBOOK_DOWNLOAD_DIR}/${name}-${_wb_file}")
  list(GET workbook_pinned_${name} 3 _wb_package)
  set(${found_var} FALSE)
  set(${why_var} "")
  if(NOT WORKBOOK_FETCH_DEPENDENCIES)
    set(${why_var} "not installed, and WORKBOOK_FETCH_DEPENDENCIES is OFF: install ${_wb_package}, or configure with -DWORKBOOK_FETCH_DEPENDENCIES=ON (CMake then downloads ${name} ${_wb_version})")
  else()
    set(_wb_actual "")
    if(EXISTS "${_wb_archive}")
      file(SHA256 "${_wb_archive}" _wb_actual)
    endif()
    if(NOT _wb_actual STREQUAL _wb_sha256)
      message(STATUS "workbook: ${name} not installed: downloading ${name} ${_wb_version} (${_wb_url})")
      # No EXPECTED_HASH here: with it a failed download is a fatal error, and offline the line
      # below is what the reader should see. The hash is checked right after, and by FetchContent.
      file(DOWNLOAD "${_wb_url}" "${_wb_archive}.part" STATUS _wb_status TLS_VERIFY ON
           TIMEOUT 600 INACTIVITY_TIMEOUT 60)
      list(GET _wb_status 0 _wb_code)
      list(GET _wb_status 1 _wb_message)
      string(REPLACE "\"" "" _wb_message "${_wb_message}")
      if(_wb_code EQUAL 0)
        file(SHA256 "${_wb_archive}.part" _wb_actual)
        if(_wb_actual STREQUAL _wb_sha256)
          file(RENAME "${_wb_archive}.part" "${_wb_archive}")
        else()
          set(${why_var} "not installed, and its download ${_wb_url} has SHA256 ${_wb_actual}, not the pinned ${_wb_sha256}, so it is not used: install ${_wb_package}")
        endif()
      else()
        set(${why_var} "not installed, and its download failed (${_wb_message}): install ${_wb_package}, or configure again online (CMake then downloads ${name} ${_wb_version}), or save ${_wb_url} as ${_wb_archive}")
      endif()
      file(REMOVE "${_wb_archive}.part")
    endif()
    if(${why_var} STREQUAL "")
      FetchContent_Declare(workbook_${name} URL "${_wb_archive}" URL_HASH SHA256=${_wb_sha256})
      FetchContent_MakeAvailable(workbook_${name})
      set(${found_var} TRUE)
      set_property(GLOBAL APPEND PROPERTY WORKBOOK_SUMMARY_LINES
                   "${name} ${_wb_version} built here from its pinned release (SHA256 checked): no ${name} package is installed")
    endif()
  endif()
endmacro()

# workbook_require(<name> <find_package arguments...>): the system's package, else the pinned
# release; neither stops configure with one line.
macro(workbook_require name)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    workbook_fetch(${name} _wb_fetched _wb_why)
    if(NOT _wb_fetched)
      message(FATAL_ERROR "${name} ${_wb_why}")
    endif()
  endif()
endmacro()

# CUDA 13 only: 04 calls cudaMemcpyBatchAsync with CUDA 13's arguments (12.8 had another
# signature, older 12s none), and no CUDA 12 toolkit has built the workbook. Claimed: what was built.
if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13.0)
  message(FATAL_ERROR "CUDA ${CMAKE_CUDA_COMPILER_VERSION} is too old: the workbook needs CUDA 13.0 or newer "
                      "(chapter 04's cudaMemcpyBatchAsync takes CUDA 13's arguments); PyPI's nvidia-cuda-nvcc has it, see README.md")
endif()

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "CUDAToolkit not found: install the CUDA toolkit (nvcc, cudart, cuRAND)")
endif()
workbook_require(CLI11 CONFIG)
workbook_require(nlohmann_json 3 CONFIG)

# Catch2, for the tests only. Set again at every configure: a build folder that gets Catch2 later
# (installed, or online) takes the tests in then.
set(WORKBOOK_TESTS_LEFT_OUT "" CACHE INTERNAL "Why tests/ is not built (empty: it is, or WORKBOOK_BUILD_TESTS is OFF)")
if(WORKBOOK_BUILD_TESTS)
  find_package(Catch2 3 CONFIG QUIET)
  if(NOT Catch2_FOUND)
    workbook_fetch(Catch2 workbook_catch2_fetched workbook_catch2_why)
    if(workbook_catch2_fetched)
      # include(Catch) in tests/: catch_discover_tests comes with Catch2's sources.
      FetchContent_GetProperties(workbook_Catch2 SOURCE_DIR workbook_catch2_source)
      list(APPEND CMAKE_MODULE_PATH "${workbook_catch2_source}/extras")
    else()
      set(WORKBOOK_TESTS_LEFT_OUT "Catch2 v3 ${workbook_catch2_why}"
          CACHE INTERNAL "Why tests/ is not built (empty: it is, or WORKBOOK_BUILD_TESTS is OFF)")
    endif()
  endif()
endif()

# scripts/install-deps.sh puts the plots' packages and Jinja2 into .venv/ (which also sees the system's,
# torch included): the tests run the scripts with that Python when it is there, unless the reader
# configures from an activated virtual or conda environment of their own, which is then found first.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python3"
   AND (NOT DEFINED ENV{VIRTUAL_ENV} OR "$ENV{VIRTUAL_ENV}" STREQUAL "${PROJECT_SOURCE_DIR}/.venv")
   AND NOT DEFINED ENV{CONDA_PREFIX})
  set(Python3_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
endif()
find_package(Python3 COMPONENTS Interpreter)
find_program(WORKBOOK_COMPUTE_SANITIZER compute-sanitizer
             HINTS "${CUDAToolkit_BIN_DIR}" "${CUDAToolkit_BIN_DIR}/../compute-sanitizer")

# Finds what every chapter needs. A missing piece stops configure with one line that names the
# package to install (a macro, so that the packages' variables reach the caller); scripts/install-deps.sh installs all of them on Debian and Ubuntu.

macro(workbook_require_package name install_hint)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR "${name} not found: ${install_hint}")
  endif()
endmacro()

if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.0)
  message(FATAL_ERROR "CUDA ${CMAKE_CUDA_COMPILER_VERSION} is too old: the workbook needs CUDA 12.0 or newer")
endif()

workbook_require_package(CUDAToolkit "install the CUDA toolkit (nvcc, cudart, cuRAND)")
workbook_require_package(CLI11 "install libcli11-dev (apt) or CLI11 2.x" CONFIG)
workbook_require_package(nlohmann_json "install nlohmann-json3-dev (apt) or nlohmann_json 3.x" CONFIG)
if(WORKBOOK_BUILD_TESTS)
  workbook_require_package(Catch2
      "install Catch2 v3: on Debian 12 `apt-get install -t bookworm-backports catch2`, elsewhere libcatch2-dev or catch2 >= 3"
      3 CONFIG)
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

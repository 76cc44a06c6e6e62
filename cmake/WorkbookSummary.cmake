# The lines that end every configure: what this build folder builds, and what it leaves out. The
# scripts show these lines (each begins "-- workbook:"), so a reader sees the architectures and the
# optional pieces without reading CMake's own output.

# "75-real;90" -> "sm_75 sm_90 + PTX compute_90": "-real" is machine code only, "-virtual" PTX
# only, a bare number both.
function(workbook_describe_architectures out)
  set(machine_code)
  set(ptx)
  foreach(arch IN LISTS ARGN)
    string(REGEX MATCH "^[0-9]+[af]?" number "${arch}")
    if(NOT arch MATCHES "-virtual$")
      list(APPEND machine_code "sm_${number}")
    endif()
    if(NOT arch MATCHES "-real$")
      list(APPEND ptx "compute_${number}")
    endif()
  endforeach()
  list(JOIN machine_code " " text)
  if(ptx)
    list(JOIN ptx " " ptx_text)
    string(APPEND text " + PTX ${ptx_text}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

if(CMAKE_CUDA_ARCHITECTURES MATCHES "^(native|all|all-major)$")
  set(arch_text "${CMAKE_CUDA_ARCHITECTURES}")
else()
  workbook_describe_architectures(arch_text ${CMAKE_CUDA_ARCHITECTURES})
endif()
if(CMAKE_CUDA_ARCHITECTURES STREQUAL WORKBOOK_DEFAULT_CUDA_ARCHITECTURES)
  set(arch_origin "the default")
elseif(DEFINED ENV{CUDAARCHS})
  set(arch_origin "chosen when this build folder was configured; unset CUDAARCHS and add --fresh for the default")
else()
  set(arch_origin "chosen when this build folder was configured; `cmake --preset default --fresh` goes back to the default")
endif()
message(STATUS "workbook: CUDA ${CMAKE_CUDA_COMPILER_VERSION}, building for ${arch_text} (${arch_origin})")
# CUDAARCHS only seeds a new build folder; say so instead of ignoring it silently.
if(DEFINED ENV{CUDAARCHS} AND NOT "$ENV{CUDAARCHS}" STREQUAL "${CMAKE_CUDA_ARCHITECTURES}")
  message(STATUS "workbook: CUDAARCHS=$ENV{CUDAARCHS} is ignored: this build folder already builds for "
                 "${CMAKE_CUDA_ARCHITECTURES}; add --fresh (or -DCMAKE_CUDA_ARCHITECTURES=$ENV{CUDAARCHS})")
endif()

# The Python side: which of its packages this python3 has, so that a reader knows which scripts
# will run and which tests will skip (looked up, not imported: importing torch takes seconds).
if(Python3_EXECUTABLE)
  set(python_found)
  set(python_missing)
  foreach(package numpy matplotlib torch)
    execute_process(COMMAND "${Python3_EXECUTABLE}" -c
                            "import importlib.util, sys; sys.exit(importlib.util.find_spec('${package}') is None)"
                    RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
    if(status EQUAL 0)
      list(APPEND python_found ${package})
    else()
      list(APPEND python_missing ${package})
    endif()
  endforeach()
  list(JOIN python_found ", " found_text)
  list(JOIN python_missing ", " missing_text)
  if(python_found)
    set(found_text "found ${found_text}; ")
  endif()
  if(python_missing)
    message(STATUS "workbook: Python ${Python3_EXECUTABLE}: ${found_text}missing ${missing_text} "
                   "(the plots need numpy and matplotlib: pip install -r requirements-plots.txt; the PyTorch "
                   "scripts need torch: requirements-pytorch.txt; their tests skip without them)")
  else()
    message(STATUS "workbook: Python ${Python3_EXECUTABLE}: ${found_text}nothing missing")
  endif()
else()
  message(STATUS "workbook: python3 not found: the Python scripts and their tests are left out")
endif()

get_property(workbook_summary_lines GLOBAL PROPERTY WORKBOOK_SUMMARY_LINES)
foreach(line IN LISTS workbook_summary_lines)
  message(STATUS "workbook: ${line}")
endforeach()
if(NOT WORKBOOK_CONFIGURED_WITH_GPU)
  get_property(checkers TARGET workbook_exercise_checkers PROPERTY MANUALLY_ADDED_DEPENDENCIES)
  set(left_out_count 0)
  foreach(target IN LISTS checkers)
    get_target_property(left_out ${target} EXCLUDE_FROM_ALL)
    if(left_out)
      math(EXPR left_out_count "${left_out_count} + 1")
    endif()
  endforeach()
  message(STATUS "workbook: no GPU found: ${left_out_count} of the exercises' checker programs are left out of the "
                 "build (their tests need a GPU; with one, configure again, or ctest builds them first)")
endif()
if(WORKBOOK_COMPUTE_SANITIZER)
  message(STATUS "workbook: compute-sanitizer found (${WORKBOOK_COMPUTE_SANITIZER}): sanitize tests registered")
else()
  message(STATUS "workbook: compute-sanitizer not found: the sanitize tests are left out "
                 "(it comes with the full CUDA toolkit, in its bin/ folder)")
endif()

# The one place that says how a chapter is built and smoke-tested.
#
#   workbook_add_chapter(<program>
#       PROGRAM <sources...>          main: flags, reference, check, time, report
#       [LIBRARY <sources...>]        kernels, launchers and *_cpu twins -> target <program>_core
#       [LINK <targets...>]           extra libraries, e.g. CUDA::curand
#       [SMOKE_LABELS <labels...>]    ctest labels of `<program> --quick` (default: gpu)
#       [SANITIZE_ARGS <args...>]     arguments under compute-sanitizer (default: --quick)
#       [SANITIZER_OPTIONS <opts...>] extra compute-sanitizer options, each with its reason
#       [RUN_SERIAL])                 the program measures device-wide state (free memory, say):
#                                     ctest runs its smoke, sanitize and GPU Catch2 tests alone
#
# Every program exits 77 when it has no usable GPU; ctest reports that as skipped.

# Compile policy shared by the chapters, common/ and tests/: C++17 and CUDA 17, warnings as errors
# in host and device code, and line information so that profilers and compute-sanitizer can name
# source lines.
add_library(workbook_policy INTERFACE)
add_library(workbook::policy ALIAS workbook_policy)
target_compile_features(workbook_policy INTERFACE cxx_std_17 cuda_std_17)
target_compile_options(workbook_policy INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Wshadow,-Werror -lineinfo>)
if(WORKBOOK_SYNC_LAUNCHES)
  target_compile_definitions(workbook_policy INTERFACE WORKBOOK_SYNC_LAUNCHES=1)
endif()

set(WORKBOOK_SANITIZER_TOOLS memcheck racecheck initcheck synccheck)

function(workbook_add_chapter program)
  cmake_parse_arguments(PARSE_ARGV 1 arg "RUN_SERIAL" "" "PROGRAM;LIBRARY;LINK;SMOKE_LABELS;SANITIZE_ARGS;SANITIZER_OPTIONS")
  if(NOT arg_PROGRAM)
    message(FATAL_ERROR "workbook_add_chapter(${program}): PROGRAM sources are required")
  endif()
  if(NOT arg_SMOKE_LABELS)
    set(arg_SMOKE_LABELS gpu)
  endif()
  if(NOT arg_SANITIZE_ARGS)
    set(arg_SANITIZE_ARGS --quick)
  endif()
  get_filename_component(chapter "${CMAKE_CURRENT_SOURCE_DIR}" NAME)

  if(arg_LIBRARY)
    add_library(${program}_core STATIC ${arg_LIBRARY})
    target_include_directories(${program}_core PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}")
    target_link_libraries(${program}_core PUBLIC workbook::common ${arg_LINK} PRIVATE workbook::policy)
    set(core ${program}_core)
  endif()

  add_executable(${program} ${arg_PROGRAM})
  target_link_libraries(${program} PRIVATE ${core} workbook::common ${arg_LINK} workbook::policy)

  # Programs with device code of their own: tests/test_build.cpp checks their architectures.
  set(cuda_sources ${arg_PROGRAM} ${arg_LIBRARY})
  list(FILTER cuda_sources INCLUDE REGEX "\\.cu$")
  if(cuda_sources)
    set_property(GLOBAL APPEND PROPERTY WORKBOOK_GPU_PROGRAMS ${program})
  endif()

  set(serial FALSE)
  if(arg_RUN_SERIAL)
    set(serial TRUE)
    set_property(GLOBAL APPEND PROPERTY WORKBOOK_SERIAL_PROGRAMS ${program})  # for tests/
  endif()

  add_test(NAME "${chapter}: smoke --quick" COMMAND ${program} --quick)
  set_tests_properties("${chapter}: smoke --quick" PROPERTIES
      LABELS "${arg_SMOKE_LABELS}" SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL ${serial})

  if(WORKBOOK_COMPUTE_SANITIZER)
    foreach(tool IN LISTS WORKBOOK_SANITIZER_TOOLS)
      set(extra)
      if(tool STREQUAL "memcheck")
        set(extra --leak-check full)
      endif()
      set(name "${chapter}: sanitize ${tool}")
      # Without a usable GPU the sanitizer itself fails, so ask workbook_needs_gpu first: its 77
      # makes the test a skip, with the reason in the test's output.
      add_test(NAME "${name}"
               COMMAND sh -c "\"\$0\" >/dev/null || exit \$?; exec \"\$@\""
                       $<TARGET_FILE:workbook_needs_gpu>
                       "${WORKBOOK_COMPUTE_SANITIZER}" --tool ${tool} ${extra} ${arg_SANITIZER_OPTIONS}
                       --error-exitcode 99
                       $<TARGET_FILE:${program}> ${arg_SANITIZE_ARGS})
      set_tests_properties("${name}" PROPERTIES LABELS sanitize SKIP_RETURN_CODE 77 TIMEOUT 600
                           RUN_SERIAL ${serial})
    endforeach()
  endif()
endfunction()

# The one place that says how a chapter is built and smoke-tested.
#
#   workbook_add_chapter(<program>
#       LESSON <sources...>           the lesson, main included (its first file), read top to bottom
#       [SHARED <sources...>]         lesson files every lesson program of the chapter links (06's replica)
#       [SUPPORT <sources...>]        what the lesson programs link but a reader need not read (06's
#                                     bounded waits, launch environment), compiled once with SHARED
#       [OTHER_LESSON <program2> <main2> <sources...>]  a second lesson program (main in main2) that
#                                     links SHARED and SUPPORT too, and is smoke- and sanitizer-tested
#                                     as the first; its kernels go into <program>_core as well
#       [BENCH <sources...>]          the measuring harness: program <program>_bench, main in its first file
#       [BENCH_LINK <targets...>]     libraries only the bench needs, e.g. CUDA::cublas
#       [BENCH_SMOKE_LABELS <labels>] ctest labels of `<program>_bench --quick` (default: SMOKE_LABELS)
#   or, for a chapter not yet split into a lesson and a bench:
#       PROGRAM <sources...>          main: flags, reference, check, time, report
#       [LIBRARY <sources...>]        kernels, launchers and *_cpu twins -> target <program>_core
#   and for both:
#       [LINK <targets...>]           extra libraries, e.g. CUDA::curand
#       [SMOKE_LABELS <labels...>]    ctest labels of `<program> --quick` (default: gpu)
#       [SANITIZE_ARGS <args...>]     arguments under compute-sanitizer (default: --quick)
#       [SANITIZER_OPTIONS <opts...>] extra compute-sanitizer options, each with its reason
#       [BENCH_SANITIZE_PARTS <subcommands...>]  the bench under each tool once per subcommand
#                                     (`<bench> <part> BENCH_SANITIZE_ARGS`), so that ctest runs a
#                                     bench of many parts beside the other tests, not minutes alone
#       [RUN_SERIAL]                  the program measures device-wide state (free memory, say):
#                                     ctest runs its smoke, sanitize and GPU Catch2 tests alone
#       [SANITIZE_BESIDE_OTHERS])     with RUN_SERIAL: the sanitizer runs (on one GPU) still run
#                                     beside the other tests
#
# Every program exits 77 when it has no usable GPU; ctest reports that as skipped.
#
# A LESSON is compiled once, into the library <program>_core that the bench and the tests link,
# with its main() renamed workbook_<program>_main (-Dmain=...); the program is those objects and a
# generated two-line main() that calls it (workbook_add_lesson_main, below). Compiling the lesson a
# second time without its main() would double the build's heaviest CUDA compilations.

# Compile policy shared by the chapters, common/ and tests/: C++17 and CUDA 17, warnings as errors
# in host and device code, line information so that profilers and compute-sanitizer can name
# source lines, and host arithmetic that is never fused: the CPU twins must round as the kernels
# do (a*b + c as two roundings where the kernel writes two), and g++ contracts a*b + c into one
# FMA by default wherever the target has one (aarch64 always; x86-64 with -march=haswell or newer).
add_library(workbook_policy INTERFACE)
add_library(workbook::policy ALIAS workbook_policy)
target_compile_features(workbook_policy INTERFACE cxx_std_17 cuda_std_17)
target_compile_options(workbook_policy INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Werror -ffp-contract=off>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Wshadow,-Werror,-ffp-contract=off -lineinfo>)
if(WORKBOOK_SYNC_LAUNCHES)
  target_compile_definitions(workbook_policy INTERFACE WORKBOOK_SYNC_LAUNCHES=1)
endif()

set(WORKBOOK_SANITIZER_TOOLS memcheck racecheck initcheck synccheck)

function(workbook_add_chapter program)
  cmake_parse_arguments(PARSE_ARGV 1 arg "RUN_SERIAL;SANITIZE_BESIDE_OTHERS" ""
                        "LESSON;SHARED;SUPPORT;OTHER_LESSON;BENCH;BENCH_LINK;BENCH_SMOKE_LABELS;PROGRAM;LIBRARY;LINK;SMOKE_LABELS;SANITIZE_ARGS;SANITIZER_OPTIONS;BENCH_SANITIZE_ARGS;BENCH_SANITIZE_PARTS")
  if(NOT arg_PROGRAM AND NOT arg_LESSON)
    message(FATAL_ERROR "workbook_add_chapter(${program}): LESSON (or PROGRAM) sources are required")
  endif()
  if(NOT arg_SMOKE_LABELS)
    set(arg_SMOKE_LABELS gpu)
  endif()
  if(NOT arg_SANITIZE_ARGS)
    set(arg_SANITIZE_ARGS --quick)
  endif()
  get_filename_component(chapter "${CMAKE_CURRENT_SOURCE_DIR}" NAME)

  set(programs ${program})
  if(arg_LESSON)
    # The lesson's first file holds main(), renamed in the one compilation both the program and
    # the core library take their objects from; its other files, and the shared and support
    # files, are compiled once too, into both.
    list(GET arg_LESSON 0 lesson_main)
    set(lesson_parts ${arg_LESSON})
    list(REMOVE_AT lesson_parts 0)
    set(shared)
    if(arg_SHARED OR arg_SUPPORT)
      workbook_add_objects(${program}_shared "${arg_LINK}" ${arg_SHARED} ${arg_SUPPORT})
      set(shared $<TARGET_OBJECTS:${program}_shared>)
    endif()
    set(parts ${shared})
    if(lesson_parts)
      workbook_add_objects(${program}_lesson "${arg_LINK}" ${lesson_parts})
      list(APPEND parts $<TARGET_OBJECTS:${program}_lesson>)
    endif()
    workbook_add_lesson_main(${program} ${lesson_main} "${arg_LINK}")
    add_library(${program}_core STATIC $<TARGET_OBJECTS:${program}_main> ${parts})
    add_executable(${program} "${CMAKE_CURRENT_BINARY_DIR}/${program}_main_stub.cpp" $<TARGET_OBJECTS:${program}_main> ${parts})
    if(arg_OTHER_LESSON)
      list(POP_FRONT arg_OTHER_LESSON other other_main)
      set(other_parts ${shared})
      if(arg_OTHER_LESSON)
        workbook_add_objects(${other}_lesson "${arg_LINK}" ${arg_OTHER_LESSON})
        list(APPEND other_parts $<TARGET_OBJECTS:${other}_lesson>)
        target_sources(${program}_core PRIVATE $<TARGET_OBJECTS:${other}_lesson>)
      endif()
      workbook_add_lesson_main(${other} ${other_main} "${arg_LINK}")
      target_sources(${program}_core PRIVATE $<TARGET_OBJECTS:${other}_main>)
      add_executable(${other} "${CMAKE_CURRENT_BINARY_DIR}/${other}_main_stub.cpp" $<TARGET_OBJECTS:${other}_main>
                     ${other_parts})
      target_include_directories(${other} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
      target_link_libraries(${other} PRIVATE workbook::common ${arg_LINK} workbook::policy)
      set_property(TARGET ${program} PROPERTY WORKBOOK_OTHER_PROGRAM ${other})  # for tests/
      list(APPEND programs ${other})
      list(APPEND arg_LESSON ${other_main} ${arg_OTHER_LESSON})  # device code: see cuda_sources below
    endif()
  else()
    if(arg_LIBRARY)
      add_library(${program}_core STATIC ${arg_LIBRARY})
    endif()
    add_executable(${program} ${arg_PROGRAM})
  endif()
  if(TARGET ${program}_core)
    target_include_directories(${program}_core PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}")
    target_link_libraries(${program}_core PUBLIC workbook::common ${arg_LINK} PRIVATE workbook::policy)
  endif()
  target_include_directories(${program} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT arg_LESSON AND arg_LIBRARY)
    target_link_libraries(${program} PRIVATE ${program}_core)
  endif()
  target_link_libraries(${program} PRIVATE workbook::common ${arg_LINK} workbook::policy)

  if(arg_BENCH)
    # The bench's own files beside main (its first file) go into the core library too, so that
    # the tests can reach them.
    list(GET arg_BENCH 0 bench_main)
    set(bench_parts ${arg_BENCH})
    list(REMOVE_AT bench_parts 0)
    if(bench_parts)
      target_sources(${program}_core PRIVATE ${bench_parts})
      target_link_libraries(${program}_core PUBLIC ${arg_BENCH_LINK})
    endif()
    add_executable(${program}_bench ${bench_main})
    target_link_libraries(${program}_bench PRIVATE ${program}_core workbook::common ${arg_LINK} ${arg_BENCH_LINK}
                          workbook::policy)
    list(APPEND programs ${program}_bench)
  endif()

  # Programs with device code of their own: tests/test_build.cpp checks their architectures. A
  # lesson without kernels (01) can still have a bench with some.
  set(cuda_sources ${arg_PROGRAM} ${arg_LIBRARY} ${arg_LESSON} ${arg_SUPPORT})
  list(FILTER cuda_sources INCLUDE REGEX "\\.cu$")
  set(bench_cuda_sources ${arg_BENCH})
  list(FILTER bench_cuda_sources INCLUDE REGEX "\\.cu$")
  if(cuda_sources)
    set_property(GLOBAL APPEND PROPERTY WORKBOOK_GPU_PROGRAMS ${programs})
  elseif(bench_cuda_sources)
    set_property(GLOBAL APPEND PROPERTY WORKBOOK_GPU_PROGRAMS ${program}_bench)
  endif()

  set(serial FALSE)
  if(arg_RUN_SERIAL)
    set(serial TRUE)
    set_property(GLOBAL APPEND PROPERTY WORKBOOK_SERIAL_PROGRAMS ${program})  # for tests/
  endif()
  set(sanitize_serial ${serial})
  if(arg_SANITIZE_BESIDE_OTHERS)
    set(sanitize_serial FALSE)
  endif()

  if(NOT arg_BENCH_SANITIZE_ARGS)
    set(arg_BENCH_SANITIZE_ARGS --quick)
  endif()
  if(NOT arg_BENCH_SMOKE_LABELS)
    set(arg_BENCH_SMOKE_LABELS ${arg_SMOKE_LABELS})
  endif()
  foreach(target IN LISTS programs)
    set(what "")
    set(args ${arg_SANITIZE_ARGS})
    set(labels ${arg_SMOKE_LABELS})
    if(NOT target STREQUAL program AND NOT target STREQUAL "${program}_bench")
      set(what "${target} ")  # the other lesson program
    endif()
    if(target STREQUAL "${program}_bench")
      set(what "bench ")
      set(args ${arg_BENCH_SANITIZE_ARGS})
      set(labels ${arg_BENCH_SMOKE_LABELS})
    endif()
    workbook_add_smoke_test(${target} "${chapter}: ${what}" "${labels}" ${serial})
    if(target STREQUAL "${program}_bench" AND arg_BENCH_SANITIZE_PARTS)
      foreach(part IN LISTS arg_BENCH_SANITIZE_PARTS)
        workbook_add_sanitizer_tests(${target} "${chapter}: bench ${part} " ${sanitize_serial}
                                     "${arg_SANITIZER_OPTIONS}" ${part} ${args})
      endforeach()
    else()
      workbook_add_sanitizer_tests(${target} "${chapter}: ${what}" ${sanitize_serial}
                                   "${arg_SANITIZER_OPTIONS}" ${args})
    endif()
  endforeach()
endfunction()

# A lesson's main file as the object library <program>_main, its main() renamed
# workbook_<program>_main, and the stub <program>_main_stub.cpp whose main() calls it.
function(workbook_add_lesson_main program main_file link)
  workbook_add_objects(${program}_main "${link}" ${main_file})
  target_compile_definitions(${program}_main PRIVATE main=workbook_${program}_main)
  file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${program}_main_stub.cpp" CONTENT
       "// Generated by workbook_add_lesson_main: the lesson's main(), compiled as workbook_@program@_main.\n\
int workbook_@program@_main(int argc, char** argv);\n\
int main(int argc, char** argv) { return workbook_@program@_main(argc, argv); }\n" @ONLY)
endfunction()

# An object library of a chapter's sources, compiled as the chapter's programs are.
function(workbook_add_objects name link)
  add_library(${name} OBJECT ${ARGN})
  target_include_directories(${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_libraries(${name} PUBLIC workbook::common ${link} PRIVATE workbook::policy)
endfunction()

# The smoke test `<target> --quick`.
function(workbook_add_smoke_test target prefix labels serial)
  add_test(NAME "${prefix}smoke --quick" COMMAND ${target} --quick)
  set_tests_properties("${prefix}smoke --quick" PROPERTIES
      LABELS "${labels}" SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL ${serial})
endfunction()

# One run of `<target> <args...>` under each compute-sanitizer tool, named "<prefix>sanitize <tool>"
# (label sanitize); nothing when CMake found no compute-sanitizer.
function(workbook_add_sanitizer_tests target prefix serial sanitizer_options)
  set(args ${ARGN})
  if(WORKBOOK_COMPUTE_SANITIZER)
    foreach(tool IN LISTS WORKBOOK_SANITIZER_TOOLS)
      set(extra)
      if(tool STREQUAL "memcheck")
        set(extra --leak-check full)
      endif()
      set(name "${prefix}sanitize ${tool}")
      # Without a usable GPU the sanitizer itself fails, so ask workbook_needs_gpu first: its 77
      # makes the test a skip, with the reason in the test's output.
      add_test(NAME "${name}"
               COMMAND sh -c "\"\$0\" >/dev/null || exit \$?; exec \"\$@\""
                       $<TARGET_FILE:workbook_needs_gpu>
                       "${WORKBOOK_COMPUTE_SANITIZER}" --tool ${tool} ${extra} ${sanitizer_options}
                       --error-exitcode 99
                       $<TARGET_FILE:${target}> ${args})
      # COST: the slowest tests; ctest -j starts them first, before the many short ones.
      set_tests_properties("${name}" PROPERTIES LABELS sanitize SKIP_RETURN_CODE 77 TIMEOUT 600
                           RUN_SERIAL ${serial} COST 100)
    endforeach()
  endif()
endfunction()

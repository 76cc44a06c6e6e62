# Run at every build (common/CMakeLists.txt): writes workbook_git_state.h with the commit the
# sources are at and whether tracked files outside */results/ and test-logs/ (what runs write)
# differ from it, so that every
# program can say which code made its results (common/provenance.cpp). The file is rewritten only
# when that changes, so an unchanged tree rebuilds nothing.
#   cmake -DSOURCE_DIR=<workbook> -DOUTPUT=<header> -P WorkbookGitState.cmake
find_package(Git QUIET)
set(commit "unknown")
set(tree "unknown")
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse HEAD
                  RESULT_VARIABLE status OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(status EQUAL 0)
    set(commit "${head}")
    # results/ holds what the programs write, not what they are made of.
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                            -- . ":(exclude)*/results/*" ":(exclude)test-logs/*"
                    RESULT_VARIABLE status OUTPUT_VARIABLE changes ERROR_QUIET)
    if(NOT status EQUAL 0)
      set(tree "unknown")
    elseif(changes STREQUAL "")
      set(tree "clean")
    else()
      set(tree "modified")
    endif()
  endif()
endif()
set(text "// Written by cmake/WorkbookGitState.cmake at build time.\n#pragma once\n#define WORKBOOK_GIT_COMMIT \"${commit}\"\n#define WORKBOOK_GIT_TREE \"${tree}\"\n#define WORKBOOK_SOURCE_DIR \"${SOURCE_DIR}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()

// program_checks.h: the checks every chapter's tests make on a run of its programs, written once.
//
//   check_usage_error(with_args({WORKBOOK_PROGRAM}, {"--repeats", "0"}), "--repeats must be at least 1");
//   check_no_gpu({WORKBOOK_BENCH_PROGRAM, "--quick"}, "fused_kernels_bench");
//   require_pass(r);   // exit 0, PASS last
//
// A run a program will not do ends the same way in every chapter: one line on stderr and an exit
// code (2 bad usage, 77 no GPU, 1 too little memory). Each check captures the command it ran.
#pragma once

#include "run_program.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers.hpp>

#include <string>
#include <vector>

namespace workbook::testing {

// What the one line on stderr must say: StartsWith(...), ContainsSubstring(...), or both with &&.
using LineMatcher = Catch::Matchers::MatcherBase<std::string>;

// Whether stdout must stay empty too: a refusal before the report's first line leaves it empty.
enum class Stdout { kAny, kEmpty };

// Runs `argv` (with `env`): exit code `exit_code` and exactly one line on stderr.
ProgramResult check_one_line(const std::vector<std::string>& argv, int exit_code, Stdout out = Stdout::kAny,
                             const Env& env = {});

// The same, and that line matches `line`.
ProgramResult check_one_line(const std::vector<std::string>& argv, int exit_code, const LineMatcher& line,
                             Stdout out = Stdout::kAny, const Env& env = {});

// Bad usage: exit 2, one line that starts "error: " and names what was wrong (`message`).
ProgramResult check_usage_error(const std::vector<std::string>& argv, const std::string& message,
                                Stdout out = Stdout::kAny, const Env& env = {});

// Every GPU hidden: exit 77 and one line, the program's reason for stopping.
ProgramResult check_no_gpu(const std::vector<std::string>& argv, Stdout out = Stdout::kAny);

// The same, and the line starts "<name> needs a CUDA GPU: ", the program naming itself.
ProgramResult check_no_gpu(const std::vector<std::string>& argv, const std::string& name, Stdout out = Stdout::kAny);

// A run that passed: exit 0 (required: nothing after it means anything otherwise) and PASS as the
// last line of stdout. The caller captures the output, for its own checks after this one too.
void require_pass(const ProgramResult& r);

}  // namespace workbook::testing

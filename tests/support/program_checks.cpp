// program_checks.cpp: each one-line check runs the program, then checks it with the command, its
// environment and its output captured, so that a failure names its case among a table's many.
#include "program_checks.h"

#include <catch2/matchers/catch_matchers_string.hpp>

namespace workbook::testing {
namespace {

// The overrides as a shell would set them (CUDA_VISIBLE_DEVICES=): Catch2 cannot print a map's pairs.
std::string environment_text(const Env& env) {
  std::string text;
  for (const auto& [name, value] : env) text += (text.empty() ? "" : " ") + name + "=" + value;
  return text;
}

// Both check_one_line overloads: `line`, where given, is checked between the exit code and the count.
ProgramResult run_and_check(const std::vector<std::string>& argv, int exit_code, const LineMatcher* line, Stdout out,
                            const Env& env) {
  const ProgramResult r = run_program(argv, env);
  const std::string environment = environment_text(env);
  CAPTURE(argv, environment, r.out, r.err);
  CHECK(r.exit_code == exit_code);
  if (line != nullptr) CHECK_THAT(r.err, *line);
  CHECK(count_lines(r.err) == 1);
  if (out == Stdout::kEmpty) CHECK(r.out.empty());
  return r;
}

}  // namespace

ProgramResult check_one_line(const std::vector<std::string>& argv, int exit_code, Stdout out, const Env& env) {
  return run_and_check(argv, exit_code, nullptr, out, env);
}

ProgramResult check_one_line(const std::vector<std::string>& argv, int exit_code, const LineMatcher& line, Stdout out,
                             const Env& env) {
  return run_and_check(argv, exit_code, &line, out, env);
}

ProgramResult check_usage_error(const std::vector<std::string>& argv, const std::string& message, Stdout out,
                                const Env& env) {
  using Catch::Matchers::ContainsSubstring;
  using Catch::Matchers::StartsWith;
  return check_one_line(argv, 2, StartsWith("error: ") && ContainsSubstring(message), out, env);
}

ProgramResult check_no_gpu(const std::vector<std::string>& argv, Stdout out) {
  return check_one_line(argv, 77, out, without_gpus());
}

ProgramResult check_no_gpu(const std::vector<std::string>& argv, const std::string& name, Stdout out) {
  return check_one_line(argv, 77, Catch::Matchers::StartsWith(name + " needs a CUDA GPU: "), out, without_gpus());
}

void require_pass(const ProgramResult& r) {
  REQUIRE(r.exit_code == 0);
  CHECK(last_line(r.out) == "PASS");
}

}  // namespace workbook::testing

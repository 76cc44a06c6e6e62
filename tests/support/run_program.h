// run_program.h: run a workbook program the way a reader would, and capture what it printed.
//
//   const auto r = run_program({WORKBOOK_PROGRAM, "--quick", "--json", path});
//   REQUIRE(r.exit_code == 0);
//   const nlohmann::json j = read_json(path);
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace workbook::testing {

struct ProgramResult {
  int exit_code = -1;  // the program's exit status; 128 + signal number if a signal killed it;
                       // 127 if it could not be found (126 if it could not be started);
                       // 124 if it ran past its time limit and was killed (as timeout(1) says)
  std::string out;     // everything it wrote to stdout
  std::string err;     // everything it wrote to stderr
};

// Environment overrides for a child, as run_program takes them.
using Env = std::map<std::string, std::string>;

// Runs argv[0] with the given arguments. `env` adds or replaces environment variables for the
// child only (an empty value sets the variable to the empty string, as CUDA_VISIBLE_DEVICES="").
// The child runs in a process group of its own; when it exits, or runs past `limit`, the whole
// group is killed, so a hung program (or a worker it started) cannot outlive the test.
ProgramResult run_program(const std::vector<std::string>& argv, const Env& env = {},
                          std::chrono::seconds limit = std::chrono::seconds(240));

// `command` (a program and the flags every case shares) followed by one case's `args`: the tests
// keep a table of argument lists and run each after the same start.
std::vector<std::string> with_args(std::vector<std::string> command, const std::vector<std::string>& args);

// The environment that hides every GPU from the child (CUDA_VISIBLE_DEVICES=""): how a test sees
// a program's no-GPU answer on any machine, a GPU machine included.
const Env& without_gpus();

// How many lines `text` holds (its '\n's): a program's refusal is exactly one line on stderr.
std::size_t count_lines(const std::string& text);

// A fresh path in the temporary directory (the file is not created).
std::string temp_path(const std::string& stem);

// Parses a JSON file; throws with the path in the message if it cannot be read or parsed.
nlohmann::json read_json(const std::string& path);

// read_json, then the file removed: a test's temporary files do not pile up in TMPDIR.
nlohmann::json take_json(const std::string& path);

// The last non-empty line of `text` (the PASS / FAIL verdict of a workbook program).
std::string last_line(const std::string& text);

// A program's report without its first line when that is the provenance line ("# provenance: ..."),
// for checks of what the report itself says ("provenance" holds "nan", say).
std::string report_after_provenance(const std::string& text);

}  // namespace workbook::testing

// test_06.h: what chapter 06's five test files share (test_06_multi_gpu.cpp: the lesson's
// promises; test_06_launcher.cpp and test_06_signals.cpp: the launcher, its signals and faults;
// test_06_bench.cpp: the bench; test_06_one_shot.cpp: the one-shot exchange's kernels): the names
// they use unqualified, running a program for its JSON, and the checks of a training report.
#pragma once

#include "gpu_support.h"
#include "program_checks.h"
#include "regression_problem.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace workbook::testing::multi_gpu {

inline std::string file_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A fake environment for the functions that take an EnvLookup.
inline std::map<std::string, std::string> fake_env;
inline const char* lookup(const char* name) {
  const auto it = fake_env.find(name);
  return it == fake_env.end() ? nullptr : it->second.c_str();
}

inline double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `program` (a lesson program or the bench) with `args` and --json; its JSON, after exit 0.
inline nlohmann::json run_json(const char* program, std::vector<std::string> args, ProgramResult* result = nullptr,
                               const std::map<std::string, std::string>& env = {}) {
  const std::string path = temp_path("multi_gpu.json");
  args.insert(args.begin(), program);
  args.insert(args.end(), {"--json", path});
  const ProgramResult r = run_program(args, env);
  skip_if_no_gpu(r);
  if (result != nullptr) *result = r;
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  return read_json(path);
}

// The problem of the one-GPU cases that compare with single_gpu bit for bit: 300001 points, 30 epochs.
inline regression::Config single_gpu_bits_problem() {
  regression::Config c;
  c.points = 300'001;
  c.epochs = 30;
  return c;
}

// A measured time as every JSON of the workbook holds it (table.h's timing()): {median, min, max, runs}.
inline void require_timing(const nlohmann::json& t, int runs) {
  CAPTURE(t.dump());
  REQUIRE(t.is_object());
  CHECK(t.size() == 4);
  CHECK(t["runs"].get<int>() == runs);
  CHECK(t["min"].get<double>() <= t["median"].get<double>());
  CHECK(t["median"].get<double>() <= t["max"].get<double>());
}

// A lesson program's report of a run (dp, or rank 0 of ddp): the common top level (program, gpus,
// the settings), passed (bit-identical ranks, the float64 reference, one GPU), one row per rank,
// every rank with rank 0's w and b and its timed runs.
inline void require_training_passed(const nlohmann::json& j, int ranks, const char* program = "multi_gpu") {
  CAPTURE(j.dump(2));
  CHECK(j["program"] == program);
  CHECK(j["gpus"] == ranks);
  CHECK(j["passed"] == true);
  REQUIRE(j["ranks"].size() == static_cast<std::size_t>(ranks));
  for (const auto& r : j["ranks"]) {
    CHECK(r["w"] == j["ranks"][0]["w"]);
    CHECK(r["b"] == j["ranks"][0]["b"]);
    require_timing(r["training_ms"], j["repeats"].get<int>());
  }
}

}  // namespace workbook::testing::multi_gpu

// The names every chapter 06 test file uses unqualified. A header of these test files only (each
// its own translation unit), so the using-directives reach no one else.
namespace workbook::multi_gpu {}
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using namespace workbook;
using namespace workbook::multi_gpu;
using namespace workbook::testing;
using namespace workbook::testing::multi_gpu;

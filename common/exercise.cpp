// exercise.cpp: the shared half of every exercise checker (exercise.h).
#include "exercise.h"

#include "cli.h"
#include "cuda_check.h"
#include "exit_codes.h"
#include "format.h"
#include "gpu_probe.h"

#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace workbook::exercise {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the attempt's source " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// compute-sanitizer as CMake found it at configure time, else from PATH; empty when absent.
std::string sanitizer_path() {
  const std::string configured = WORKBOOK_COMPUTE_SANITIZER_PATH;
  if (!configured.empty() && access(configured.c_str(), X_OK) == 0) return configured;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/compute-sanitizer";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string self_path() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's own path in /proc/self/exe");
  return std::string(buffer, static_cast<std::size_t>(n));
}

struct Finding {
  bool found = false;
  std::string line;  // the sanitizer's first report line, without its "=========" prefix
};

// Runs `tool` over this program's --sanitizer-pass. A finding is the tool's own error exit code;
// a run that fails otherwise (the attempt's own wrong answer, say) is not the tool's to report.
Finding run_tool(const std::string& sanitizer, const std::string& tool, int device) {
  const std::string command = "'" + sanitizer + "' --tool " + tool + " --error-exitcode 99 --print-limit 4 '" +
                              self_path() + "' --sanitizer-pass --device " + std::to_string(device) + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot start " + sanitizer);
  std::string output;
  char chunk[4096];
  while (std::fgets(chunk, sizeof(chunk), pipe) != nullptr) output += chunk;
  const int status = pclose(pipe);
  Finding f;
  f.found = WIFEXITED(status) && WEXITSTATUS(status) == 99;
  std::istringstream lines(output);
  for (std::string line; f.found && std::getline(lines, line);) {
    const std::size_t at = line.find("Error");
    const std::size_t invalid = line.find("Invalid");
    if (at == std::string::npos && invalid == std::string::npos) continue;
    f.line = line.substr(std::min(at, invalid));
    break;
  }
  return f;
}

}  // namespace

Checker::Checker(std::string chapter, std::string name)
    : chapter_(std::move(chapter)), name_(std::move(name)), attempt_file_(attempt_file()),
      attempt_shown_(attempt_in_workbook()) {}

std::optional<int> Checker::parse(int argc, char** argv) {
  // Every kernel loaded when CUDA starts, not at its first launch: a checker runs kernels that wait
  // for each other at once (a gather spinning for a peer's publish), and loading a kernel lazily
  // may wait for the kernels already running, which would then wait for ever. Before any CUDA call.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  // And eight hardware queues (the default, which some clusters lower to 1): with one, every
  // stream's kernels run in one line, and two that wait for each other would wait for ever.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  CLI::App app{"Checks exercise " + chapter_ + " " + name_ + " (" + attempt_shown_ +
               "): right against the chapter's CPU twin or the order its calls must keep, at the cases that "
               "catch the usual mistakes (and, for an exercise with kernels of its own, clean under "
               "compute-sanitizer), then timed against the chapter's own code. One verdict line."};
  app.add_option_function<std::string>(
         "--device", [this](const std::string& text) { device_ = parse_device(text).index; },
         "the GPU to check on (N, cuda or cuda:N; default 0)")
      ->type_name("N");
  app.add_flag("--sanitizer-pass", sanitizer_pass_,
               "only the small sizes, once (what compute-sanitizer runs; checkers without a sanitizer pass ignore it)");
  app.add_flag("--no-sanitizer", no_sanitizer_, "skip the racecheck and memcheck runs (where the checker has them)");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  // An untouched skeleton is not a failure: ctest shows it as skipped, the reader as a to-do.
  if (read_file(attempt_file_).find(kTodoMarker) != std::string::npos) {
    std::cout << "not attempted yet: " << attempt_shown_ << " still holds its " << kTodoMarker
              << " line (write the exercise, delete that line, then run scripts/check-exercise.sh " << chapter_
              << " " << name_ << ")\n";
    return kExitNoGpu;  // 77: ctest's skip
  }
  use_device(device_);  // 77 without a GPU, once the attempt has compiled
  return std::nullopt;
}

int Checker::wrong(const std::string& what, const std::string& hint) const {
  std::cout << "wrong: " << what << "; hint: " << hint << "\n";
  return kExitFailure;
}

std::optional<int> Checker::sanitize(const SanitizerHints& hints) const {
  if (sanitizer_pass_ || no_sanitizer_) return std::nullopt;
  const std::string sanitizer = sanitizer_path();
  if (sanitizer.empty()) {
    std::cout << "(compute-sanitizer is not installed: racecheck and memcheck skipped)\n";
    return std::nullopt;
  }
  const Finding race = run_tool(sanitizer, "racecheck", device_);
  if (race.found) return wrong("racecheck: " + race.line, hints.race);
  const Finding memory = run_tool(sanitizer, "memcheck", device_);
  if (memory.found) return wrong("memcheck: " + memory.line, hints.memory);
  return std::nullopt;
}

std::optional<int> Checker::need_gpus(int count) const {
  int available = 0;
  CUDA_CHECK(cudaGetDeviceCount(&available));
  if (available >= count) return std::nullopt;
  std::cout << "exercise " << chapter_ << " " << name_ << " needs " << count << " GPUs; this machine has "
            << available << " (skipped)\n";
  return kExitNoGpu;
}

void Checker::give_up(const std::string& what, const std::string& hint) {
  std::cout << "wrong: " << what << "; hint: " << hint << std::endl;
  std::fflush(nullptr);
  std::_Exit(kExitFailure);
}

struct Deadline::State {
  std::mutex mutex;
  std::condition_variable called_off;
  bool done = false;
};

Deadline::Deadline(double seconds, std::string what, std::string hint) : state_(std::make_shared<State>()) {
  watchdog_ = std::thread([state = state_, seconds, what = std::move(what), hint = std::move(hint)] {
    std::unique_lock<std::mutex> lock(state->mutex);
    if (!state->called_off.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return state->done; })) {
      Checker::give_up(what, hint);
    }
  });
}

Deadline::~Deadline() {
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->done = true;
  }
  state_->called_off.notify_one();
  watchdog_.join();
}

int Checker::correct(const Stats& attempt_us, const Stats& lesson_us, const std::string& lesson_what) const {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  const double ratio = attempt_us.median / lesson_us.median;
  const std::string speed = ratio >= 1.0 ? format("%.2fx slower than", ratio) : format("%.2fx faster than", 1.0 / ratio);
  std::cout << format("correct; %s %s (%.1f us against %.1f us on %s)\n", speed.c_str(), lesson_what.c_str(),
                      attempt_us.median, lesson_us.median, prop.name);
  return kExitOk;
}

int Checker::correct(const std::string& detail) const {
  std::cout << "correct; " << detail << "\n";
  return kExitOk;
}

bool finishes_within(cudaStream_t stream, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady) CUDA_CHECK(status);
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

bool close(double got, double want, double rel, double abs) {
  return std::isfinite(got) && std::fabs(got - want) <= abs + rel * std::fabs(want);
}

}  // namespace workbook::exercise

// exit_codes.h: what every workbook program's exit status means, and the errors that map to them.
//
//   0   done, and every result passed its check (last line PASS)
//   1   a run-time failure, or a result that failed its check (last line FAIL: <what>)
//   2   bad usage: an unknown flag or a value out of range, with a one-line reason
//   77  no usable GPU (no driver, no device, fewer GPUs than needed): ctest reports "skipped"
#pragma once

#include <stdexcept>
#include <string>

namespace workbook {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitNoGpu = 77,
};

// A flag or value the program cannot accept; main prints "error: <what>" and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The machine lacks the GPU(s) the program needs; main prints the reason and exits 77.
class NoGpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace workbook

// cuda_check.h: turn every failed CUDA runtime call into a workbook::CudaError exception.
//
//   CUDA_CHECK(cudaMalloc(&ptr, bytes));   // throws on failure, naming this file and line
//   my_kernel<<<grid, block>>>(...);
//   CUDA_CHECK_LAUNCH();                   // launch-configuration errors, and with the CMake
//                                          // option WORKBOOK_SYNC_LAUNCHES=ON faults inside the
//                                          // kernel too (it then synchronizes after each launch)
//
// main() catches the exception once (see program.h) and prints
//   error: <file>:<line>: <expression> failed: <cudaErrorName>: <message>
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace workbook {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const char* expression, const char* file, int line);
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// Out of line so that each CUDA_CHECK expands to a compare and a call, not a string build.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line);

#ifdef WORKBOOK_SYNC_LAUNCHES
inline constexpr bool kSyncAfterLaunch = true;
#else
inline constexpr bool kSyncAfterLaunch = false;
#endif

// While this thread captures a stream into a CUDA graph, a launch is recorded, not run: there is
// nothing to wait for, and a cudaDeviceSynchronize would invalidate the capture. A capture site
// holds a CapturingLaunches for the capture's length, so that WORKBOOK_SYNC_LAUNCHES skips it.
inline thread_local int capturing_launches = 0;

class CapturingLaunches {
 public:
  CapturingLaunches() { ++capturing_launches; }
  ~CapturingLaunches() { --capturing_launches; }
  CapturingLaunches(const CapturingLaunches&) = delete;
  CapturingLaunches& operator=(const CapturingLaunches&) = delete;
};

}  // namespace workbook

#define CUDA_CHECK(expr)                                                   \
  do {                                                                     \
    const cudaError_t workbook_status_ = (expr);                           \
    if (workbook_status_ != cudaSuccess) {                                 \
      ::workbook::throw_cuda_error(workbook_status_, #expr, __FILE__, __LINE__); \
    }                                                                      \
  } while (0)

// cudaGetLastError returns (and clears) a launch-configuration error such as too many threads
// per block; a fault while the kernel runs shows up only at a later synchronizing call, unless
// WORKBOOK_SYNC_LAUNCHES makes every launch synchronize so that the fault names its launch
// (every launch that runs: one being captured into a graph is not synchronized, see above).
#define CUDA_CHECK_LAUNCH()                                   \
  do {                                                        \
    CUDA_CHECK(cudaGetLastError());                           \
    if constexpr (::workbook::kSyncAfterLaunch) {             \
      if (::workbook::capturing_launches == 0) {              \
        CUDA_CHECK(cudaDeviceSynchronize());                  \
      }                                                       \
    }                                                         \
  } while (0)

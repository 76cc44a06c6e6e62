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

// Two kinds of launch must not be waited for one by one. While this thread captures a stream into
// a CUDA graph, a launch is recorded, not run: there is nothing to wait for, and a
// cudaDeviceSynchronize would invalidate the capture. And work queued behind a latch (a kernel
// that holds the stream until the host raises a flag after queuing everything) would wait for a
// host that is itself waiting. Such a site holds an UnsyncedLaunches for its length, so that
// WORKBOOK_SYNC_LAUNCHES skips those launches.
inline thread_local int unsynced_launches = 0;

class UnsyncedLaunches {
 public:
  UnsyncedLaunches() { ++unsynced_launches; }
  ~UnsyncedLaunches() { --unsynced_launches; }
  UnsyncedLaunches(const UnsyncedLaunches&) = delete;
  UnsyncedLaunches& operator=(const UnsyncedLaunches&) = delete;
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
// (every launch but those under an UnsyncedLaunches, see above).
#define CUDA_CHECK_LAUNCH()                                   \
  do {                                                        \
    CUDA_CHECK(cudaGetLastError());                           \
    if constexpr (::workbook::kSyncAfterLaunch) {             \
      if (::workbook::unsynced_launches == 0) {               \
        CUDA_CHECK(cudaDeviceSynchronize());                  \
      }                                                       \
    }                                                         \
  } while (0)

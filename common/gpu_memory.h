// gpu_memory.h: ask the driver before taking GPU memory, so that a size the user gave that does
// not fit ends with one line saying so, not with a cudaMalloc error from somewhere inside.
//
//   workbook::ByteCount need;
//   need.add(points, sizeof(float), 3);                       // x, y, predictions (overflow-safe)
//   need.add(epochs, sizeof(float));
//   workbook::require_gpu_memory("--points " + std::to_string(points), need);
//   // error: --points 60000000000 needs 686645.5 MiB of GPU memory, but only 80512.0 MiB of
//   //        81559.0 MiB are free on device 0                                    (exit 1)
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace workbook {

// What the driver says of the current device's memory: cudaMemGetInfo, which is what
// torch.cuda.mem_get_info() returns (chapter 01).
struct MemoryInfo {
  std::size_t free = 0;  // bytes
  std::size_t total = 0;
};
MemoryInfo memory_info();

// A sum of buffer sizes in bytes that cannot wrap around: past SIZE_MAX it stays saturated,
// and then no GPU can hold it.
class ByteCount {
 public:
  ByteCount() = default;
  explicit ByteCount(std::size_t bytes) : bytes_(bytes) {}
  // `copies` buffers of `count` elements of `element_bytes` each; a negative count is taken as 0.
  ByteCount& add(std::int64_t count, std::size_t element_bytes, std::size_t copies = 1);
  ByteCount& add(const ByteCount& other);
  std::size_t bytes() const { return bytes_; }
  bool saturated() const { return saturated_; }

 private:
  std::size_t bytes_ = 0;
  bool saturated_ = false;
};

// The run needs more GPU memory than is free: main prints "error: <what>" and exits 1.
class GpuMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<what> needs X MiB of GPU memory, but only Y MiB of Z MiB are free on device D" (pure, so
// that its arithmetic and wording are testable without a GPU).
std::string gpu_memory_shortfall(const std::string& what, const ByteCount& needed, std::size_t free_bytes,
                                 std::size_t total_bytes, int device);

// Asks cudaMemGetInfo on the current device and throws GpuMemoryError (the line above) when
// `needed` is more than is free. Call it before the allocations it counts.
void require_gpu_memory(const std::string& what, const ByteCount& needed);

// The same question for host memory (a training set made or read back on the host): without it
// a size too large for the machine ends in std::bad_alloc, or in the kernel's out-of-memory killer.
class HostMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// "<what> needs X MiB of host memory, but only Y MiB of Z MiB are available" (pure, testable).
std::string host_memory_shortfall(const std::string& what, const ByteCount& needed, std::size_t available_bytes,
                                  std::size_t total_bytes);
// Available host memory: MemAvailable of /proc/meminfo (what the kernel can give without
// swapping), or the free pages where there is none.
std::size_t available_host_memory();
// Throws HostMemoryError when `needed` is more than available_host_memory().
void require_host_memory(const std::string& what, const ByteCount& needed);

}  // namespace workbook

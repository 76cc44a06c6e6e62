// gpu_memory.cpp: overflow-safe byte counts and the free-memory check before allocating.
#include "gpu_memory.h"

#include "cuda_check.h"

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace workbook {

MemoryInfo memory_info() {
  MemoryInfo m;
  CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

std::string mib(std::size_t bytes) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return text;
}

}  // namespace

ByteCount& ByteCount::add(std::int64_t count, std::size_t element_bytes, std::size_t copies) {
  if (count <= 0 || element_bytes == 0 || copies == 0) return *this;
  std::size_t product = 0;
  if (saturated_ || __builtin_mul_overflow(static_cast<std::size_t>(count), element_bytes, &product) ||
      __builtin_mul_overflow(product, copies, &product) || __builtin_add_overflow(bytes_, product, &bytes_)) {
    bytes_ = kMax;
    saturated_ = true;
  }
  return *this;
}

ByteCount& ByteCount::add(const ByteCount& other) {
  if (saturated_ || other.saturated_ || __builtin_add_overflow(bytes_, other.bytes_, &bytes_)) {
    bytes_ = kMax;
    saturated_ = true;
  }
  return *this;
}

std::string gpu_memory_shortfall(const std::string& what, const ByteCount& needed, std::size_t free_bytes,
                                 std::size_t total_bytes, int device) {
  const std::string amount = needed.saturated() ? "more than 16 EiB (its byte count overflows 64 bits)"
                                                : mib(needed.bytes());
  return what + " needs " + amount + " of GPU memory, but only " + mib(free_bytes) + " of " + mib(total_bytes) +
         " are free on device " + std::to_string(device);
}

void require_gpu_memory(const std::string& what, const ByteCount& needed) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (!needed.saturated() && needed.bytes() <= free_bytes) return;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  throw GpuMemoryError(gpu_memory_shortfall(what, needed, free_bytes, total_bytes, device));
}

std::string host_memory_shortfall(const std::string& what, const ByteCount& needed, std::size_t available_bytes,
                                  std::size_t total_bytes) {
  const std::string amount = needed.saturated() ? "more than 16 EiB (its byte count overflows 64 bits)"
                                                : mib(needed.bytes());
  return what + " needs " + amount + " of host memory, but only " + mib(available_bytes) + " of " +
         mib(total_bytes) + " are available";
}

std::size_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    std::size_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : kMax;
}

void require_host_memory(const std::string& what, const ByteCount& needed) {
  const std::size_t available = available_host_memory();
  if (!needed.saturated() && needed.bytes() <= available) return;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const std::size_t total = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
  throw HostMemoryError(host_memory_shortfall(what, needed, available, total));
}

}  // namespace workbook

// device_buffer.h: owners of GPU memory (cudaMalloc) and page-locked host memory (cudaMallocHost).
//
//   workbook::DeviceBuffer<float> d_x(n);      // n floats on the current device
//   workbook::PinnedBuffer<float> h_x(n);      // n floats of pinned host memory
//   CUDA_CHECK(cudaMemcpy(d_x.data(), h_x.data(), d_x.bytes(), cudaMemcpyHostToDevice));
//
// Move-only: exactly one owner frees each allocation. Destructors never throw, so a failed free is
// not reported there: a sticky error (a kernel fault that broke the context) shows up again at the
// next checked call; any other failure only sets the runtime's last error, which the next
// CUDA_CHECK_LAUNCH() would then report against an unrelated launch.
#pragma once

#include "cuda_check.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace workbook {

namespace detail {

struct DeviceAllocator {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  static void release(void* p) noexcept { (void)cudaFree(p); }
};

struct PinnedAllocator {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
  static void release(void* p) noexcept { (void)cudaFreeHost(p); }
};

template <class T, class Allocator>
class Buffer {
  // The memory is raw: no constructor or destructor of T ever runs in it.
  static_assert(std::is_trivially_copyable_v<T>, "Buffer holds trivially copyable elements only");

 public:
  Buffer() = default;
  explicit Buffer(std::size_t count)
      : data_(count ? static_cast<T*>(Allocator::allocate(checked_bytes(count))) : nullptr), count_(count) {}
  ~Buffer() { reset(); }

  Buffer(Buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  bool empty() const noexcept { return count_ == 0; }

  void reset() noexcept {
    if (data_ != nullptr) Allocator::release(data_);
    data_ = nullptr;
    count_ = 0;
  }

 private:
  static std::size_t checked_bytes(std::size_t count) {
    if (count > SIZE_MAX / sizeof(T)) throw std::length_error("Buffer: element count overflows size_t bytes");
    return count * sizeof(T);
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace detail

// Global memory on the device that was current when it was allocated.
template <class T>
using DeviceBuffer = detail::Buffer<T, detail::DeviceAllocator>;

// Page-locked host memory: the copy engines read and write it directly, so copies run at full
// speed and cudaMemcpyAsync from it returns to the host at once.
template <class T>
using PinnedBuffer = detail::Buffer<T, detail::PinnedAllocator>;

}  // namespace workbook

// host_memory.h: the three kinds of host memory a copy can start from or land in, and the byte
// patterns the chapter uses to prove that a copy moved every byte.
//
//   transfer::HostBuffer src(bytes, transfer::HostMemory::kPinned);   // cudaMallocHost
//   transfer::fill_pattern(src.data(), src.bytes(), /*seed=*/7);
//
//   kPageable    std::malloc: what a plain torch.empty(...) on the CPU gives you. The driver must
//                stage every copy through its own page-locked bounce buffer.
//   kPinned      cudaMallocHost: what Tensor.pin_memory() and DataLoader(pin_memory=True) give you.
//                The copy engine reads and writes it directly.
//   kRegistered  std::malloc, then cudaHostRegister: memory you already have, page-locked in place.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace workbook::transfer {

inline constexpr std::size_t kKiB = std::size_t{1} << 10;
inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kGiB = std::size_t{1} << 30;

enum class HostMemory { kPageable, kPinned, kRegistered };

inline constexpr HostMemory kAllHostMemoryKinds[] = {HostMemory::kPageable, HostMemory::kPinned,
                                                     HostMemory::kRegistered};

const char* host_memory_name(HostMemory kind);  // "pageable", "pinned", "registered"

// Owns `bytes` of host memory of one kind. A pageable buffer makes no CUDA call, so it works on a
// machine without a driver. Zero bytes allocates nothing. Move-only; the destructor never throws.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(std::size_t bytes, HostMemory kind);
  ~HostBuffer() { release(); }
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  HostMemory kind() const noexcept { return kind_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  HostMemory kind_ = HostMemory::kPageable;
};

// Fills `bytes` with a pattern that depends on `seed` and on every byte's position, so that a
// copy that drops, repeats or shifts any part of the buffer cannot match it (a constant fill
// would hide all three). About 1 ns per 8 bytes.
void fill_pattern(std::byte* data, std::size_t bytes, std::uint64_t seed);

// What cudaMemcpy does with a pageable source, written out: the copy engine reads only pinned
// memory, so the bytes go through two pinned staging buffers of `chunk` bytes in turns (chunk i
// through staging[i % 2], copied on `stream` after the work already there, its end marked by
// done[i % 2]). The host refills a buffer only once the copy that read it has finished, so its
// memcpy into one buffer overlaps the DMA out of the other. Returns once every byte has landed,
// as cudaMemcpy from pageable memory does. Exercise 02 staged_copy asks for this function.
void copy_pageable_staged(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2],
                          std::size_t chunk, cudaEvent_t const (&done)[2], cudaStream_t stream);

}  // namespace workbook::transfer

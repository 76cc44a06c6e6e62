// host_memory.cpp: allocating and page-locking host memory, and the check pattern.
#include "host_memory.h"

#include "cuda_check.h"
#include "splitmix64.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace workbook::transfer {

const char* host_memory_name(HostMemory kind) {
  switch (kind) {
    case HostMemory::kPageable: return "pageable";
    case HostMemory::kPinned: return "pinned";
    case HostMemory::kRegistered: return "registered";
  }
  return "unknown";
}

HostBuffer::HostBuffer(std::size_t bytes, HostMemory kind) : bytes_(bytes), kind_(kind) {
  if (bytes == 0) return;
  if (kind == HostMemory::kPinned) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    data_ = static_cast<std::byte*>(p);
    return;
  }
  data_ = static_cast<std::byte*>(std::malloc(bytes));
  if (data_ == nullptr) throw std::bad_alloc();
  if (kind == HostMemory::kRegistered) {
    // Page-locks the pages under [data_, data_ + bytes) where they are; no alignment needed.
    const cudaError_t status = cudaHostRegister(data_, bytes, cudaHostRegisterDefault);
    if (status != cudaSuccess) {
      std::free(data_);
      data_ = nullptr;
      CUDA_CHECK(status);
    }
  }
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      kind_(other.kind_) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    kind_ = other.kind_;
  }
  return *this;
}

void HostBuffer::release() noexcept {
  if (data_ != nullptr) {
    switch (kind_) {
      case HostMemory::kPinned: (void)cudaFreeHost(data_); break;
      case HostMemory::kRegistered: (void)cudaHostUnregister(data_); std::free(data_); break;
      case HostMemory::kPageable: std::free(data_); break;
    }
  }
  data_ = nullptr;
  bytes_ = 0;
}

void fill_pattern(std::byte* data, std::size_t bytes, std::uint64_t seed) {
  const std::uint64_t base = splitmix64_of(seed);
  const std::size_t words = bytes / sizeof(std::uint64_t);
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t v = splitmix64_of(base + i);
    std::memcpy(data + i * sizeof v, &v, sizeof v);  // memcpy: no alignment assumption
  }
  if (bytes % sizeof(std::uint64_t) == 0) return;  // also keeps memcpy away from a null, empty buffer
  const std::uint64_t tail = splitmix64_of(base + words);
  std::memcpy(data + words * sizeof tail, &tail, bytes % sizeof tail);
}

void copy_pageable_staged(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2],
                          std::size_t chunk, cudaEvent_t const (&done)[2], cudaStream_t stream) {
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  for (std::size_t offset = 0, i = 0; offset < bytes; offset += chunk, ++i) {
    const std::size_t n = std::min(chunk, bytes - offset);  // the last chunk may be short
    const std::size_t buffer = i % 2;
    CUDA_CHECK(cudaEventSynchronize(done[buffer]));  // the copy that last read this buffer has ended
    std::memcpy(staging[buffer], from + offset, n);
    CUDA_CHECK(cudaMemcpyAsync(to + offset, staging[buffer], n, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaEventRecord(done[buffer], stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));  // every byte landed, as cudaMemcpy returns
}

}  // namespace workbook::transfer

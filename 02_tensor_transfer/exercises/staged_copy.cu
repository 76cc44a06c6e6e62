// Exercise 02 staged_copy: a copy from pageable memory through two pinned buffers, which is what
// cudaMemcpy does for you behind every pageable x.to('cuda') (the contract: staged_copy.h).
//
// Write staged_copy below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 02 staged_copy
// The chapter's own answer is copy_pageable_staged in host_memory.cpp.
#include "staged_copy.h"

#include "cuda_check.h"

#include <cstring>

namespace workbook::transfer::exercise {

// TODO(exercise): the loop below copies every chunk through staging[0] and waits for each copy
// on the host, so the memcpy and the DMA never overlap. Use both buffers in turns, wait for
// done[i % 2] (cudaEventSynchronize) before refilling buffer i % 2, record done[i % 2] after its
// copy, and wait for the stream once, at the end.
// Hint: the copy engine reads a staging buffer only when the stream reaches that copy, which may
// be long after cudaMemcpyAsync returned (so record done[i % 2] after the copy: recorded before
// it, the event is passed before the copy has read anything); and the last chunk is bytes - offset
// long.
void staged_copy(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2], std::size_t chunk,
                 cudaEvent_t const (&done)[2], cudaStream_t stream) {
  (void)done;
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  for (std::size_t offset = 0; offset < bytes; offset += chunk) {
    const std::size_t n = bytes - offset < chunk ? bytes - offset : chunk;
    std::memcpy(staging[0], from + offset, n);
    CUDA_CHECK(cudaMemcpyAsync(to + offset, staging[0], n, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

}  // namespace workbook::transfer::exercise

// Exercise 02 staged_copy: a copy from pageable memory through two pinned buffers, which is what
// cudaMemcpy does for you behind every pageable x.to('cuda') (the contract: staged_copy.h).
//
// Write staged_copy below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 02 staged_copy
// The chapter's own answer is copy_pageable_staged in host_memory.cpp.
#include "staged_copy.h"

#include "cuda_check.h"

#include <cstring>  // std::memcpy

namespace workbook::transfer::exercise {

// TODO(exercise): for each chunk i (offset = i x chunk, the last one bytes - offset long): wait
// for done[i % 2] (cudaEventSynchronize: the copy that last read staging[i % 2] has ended; an event
// never recorded yet returns at once), memcpy the chunk into staging[i % 2], queue its
// cudaMemcpyAsync to dst + offset on `stream`, and record done[i % 2] on `stream` after it. Once
// every chunk is queued, wait for the stream.
// Hint: the copy engine reads a staging buffer only when the stream reaches that copy, which may
// be long after cudaMemcpyAsync returned: record done[i % 2] after the copy (recorded before it,
// the event is passed before the copy has read anything), and never refill a buffer without it.
void staged_copy(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2], std::size_t chunk,
                 cudaEvent_t const (&done)[2], cudaStream_t stream) {
  (void)dst;
  (void)src;
  (void)bytes;
  (void)staging;
  (void)chunk;
  (void)done;
  (void)stream;
}

}  // namespace workbook::transfer::exercise

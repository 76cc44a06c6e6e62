// wait_then_poison.cuh: the work a copy must come after, for chapter 02's exercise checkers
// (check_timed_copy.cu, check_staged_copy.cu). CUDA only.
#pragma once

#include "globaltimer.cuh"

#include <cstddef>

namespace workbook::transfer::exercise {

inline constexpr unsigned char kPoison = 0xC3;

// Waits `ns` of GPU time, then writes the poison over dst: a copy queued after this kernel must
// land after the poison; one that lands before it shows as the poison in the destination.
__global__ inline void wait_then_poison(unsigned char* dst, std::size_t bytes, unsigned long long ns) {
  if (threadIdx.x == 0) {
    const unsigned long long start = global_timer_ns();
    while (global_timer_ns() - start < ns) __nanosleep(1000);
  }
  __syncthreads();
  for (std::size_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = kPoison;
}

}  // namespace workbook::transfer::exercise

// globaltimer.cuh: the GPU's nanosecond clock, read from device code. CUDA only.
//
//   const unsigned long long start = workbook::global_timer_ns();
//   while (workbook::global_timer_ns() - start < wait_ns) __nanosleep(1000);
//
// %globaltimer counts nanoseconds on every SM alike (unlike clock64(), which counts one SM's
// cycles), so a kernel can wait a given time, or give up after one.
#pragma once

namespace workbook {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace workbook

// on_chip_slice.cuh: one block's slice of the training set, loaded once from memory into its
// registers and shared memory, then summed every epoch without touching memory again (chapter
// 05's variant 8, chapter 06's on-chip training across GPUs). CUDA only: include it from .cu
// files. The room it needs is on_chip_room.h's.
//
//   extern __shared__ float4 slice_memory[];
//   OnChipSlice slice;
//   slice.load(x, y, n, slice_memory);            // every thread of the block, once
//   __syncthreads();
//   for (...) { const Sums s = block_sums<kOnChipThreads>(slice.sums(w, b)); ... }
//
// Block k owns a contiguous slice of the n / 4 float4s (the last block may have fewer). Thread t
// keeps float4s t, t + kOnChipThreads, ... of the slice's first kOnChipThreads x
// kOnChipRegisterFloat4 in registers, and the slice's rest lives in dynamic shared memory: its x
// float4s, then its y float4s. The last n % 4 points go to threads 0..2 of block 0. The order of
// the additions is a function of n and the grid only: reruns give the same bits.
#pragma once

#include "fused_sums.cuh"
#include "on_chip_room.h"

#include <cstdint>

namespace workbook::fused {

struct OnChipSlice {
  float4 xr[kOnChipRegisterFloat4], yr[kOnChipRegisterFloat4];
  const float4* xs = nullptr;  // in shared memory
  const float4* ys = nullptr;
  int in_registers = 0;  // float4s of this block in registers (all threads together)
  int in_shared = 0;
  bool has_tail = false;
  float x_tail = 0.0f, y_tail = 0.0f;

  // The only reads of x and y from memory. `shared` holds 2 x (the block's float4s beyond its
  // registers), as OnChipRoom::shared_bytes_for counts them. Ends without a barrier.
  __device__ __forceinline__ void load(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n,
                                       float4* shared) {
    const int t = static_cast<int>(threadIdx.x);
    const std::int64_t n4 = n / 4;
    constexpr std::int64_t kRegisterFloat4s = std::int64_t{kOnChipThreads} * kOnChipRegisterFloat4;  // per block
    const std::int64_t per_block = (n4 + gridDim.x - 1) / gridDim.x;
    const std::int64_t first = blockIdx.x * per_block;
    const std::int64_t left = n4 - first;
    const std::int64_t count = left <= 0 ? 0 : left < per_block ? left : per_block;
    in_registers = static_cast<int>(count < kRegisterFloat4s ? count : kRegisterFloat4s);
    in_shared = static_cast<int>(count - in_registers);
    const int shared_stride = per_block > kRegisterFloat4s ? static_cast<int>(per_block - kRegisterFloat4s) : 0;
    const float4* x4 = reinterpret_cast<const float4*>(x) + first;
    const float4* y4 = reinterpret_cast<const float4*>(y) + first;
#pragma unroll
    for (int k = 0; k < kOnChipRegisterFloat4; ++k) {
      const int j = t + k * kOnChipThreads;
      const bool mine = j < in_registers;
      xr[k] = mine ? x4[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      yr[k] = mine ? y4[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float4* x_shared = shared;
    float4* y_shared = shared + shared_stride;
    for (int j = t; j < in_shared; j += kOnChipThreads) {
      x_shared[j] = x4[in_registers + j];
      y_shared[j] = y4[in_registers + j];
    }
    xs = x_shared;
    ys = y_shared;
    const std::int64_t tail = 4 * n4 + t;
    has_tail = blockIdx.x == 0 && tail < n;
    x_tail = has_tail ? x[tail] : 0.0f;
    y_tail = has_tail ? y[tail] : 0.0f;
  }

  // This thread's sums of the epoch at (w, b).
  __device__ __forceinline__ Sums sums(float w, float b) const {
    const int t = static_cast<int>(threadIdx.x);
    Sums s{0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k = 0; k < kOnChipRegisterFloat4; ++k) {
      if (t + k * kOnChipThreads < in_registers) accumulate4(xr[k], yr[k], w, b, s);
    }
    for (int j = t; j < in_shared; j += kOnChipThreads) accumulate4(xs[j], ys[j], w, b, s);
    if (has_tail) accumulate(x_tail, y_tail, w, b, s);
    return s;
  }
};

}  // namespace workbook::fused

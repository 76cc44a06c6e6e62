// fused_sums.cuh: the device building blocks of the fused training pass, for chapter 05's
// kernels and chapter 06's replicas, so that both compute the three sums of an epoch with the
// same code, hence the same bits. CUDA only: include it from .cu files.
//
//   const Sums s = block_sums<kThreads>(thread_sums(x, y, n, w, b, t, T));   // valid in thread 0
//   kernel<<<fused_blocks(n, multiprocessors), kThreads, 0, stream>>>(...);
//
// The sums of one epoch over n points: sum r^2 (the loss), sum r x and sum r (the gradients),
// r = w x + b - y. Each thread reads its grid-stride share as 16-byte float4s, a block adds its
// threads' sums with a fixed-shape tree, and the order of every addition is a function of n and
// the launch shape only, so reruns are bit-identical. Their CPU twin is the float64 reference:
// train_reference in regression_problem.h sums the same three terms in double.
#pragma once

#include "ceil_div.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace workbook::fused {

constexpr int kThreads = 256;    // threads per block of the fused kernels
constexpr int kBlocksPerSm = 4;  // 1024 threads per SM, 4 x 16-byte loads each in flight
constexpr int kUnroll = 2;       // float4 pairs (x and y) loaded per thread before use

// Blocks of a fused kernel over n points: enough for kUnroll float4s per thread, at most one
// full wave of kBlocksPerSm per multiprocessor. A function of n and the SM count only.
inline int fused_blocks(std::int64_t n, int multiprocessors) {
  const std::int64_t wanted = ceil_div(ceil_div(n, 4), static_cast<std::int64_t>(kThreads) * kUnroll);
  return static_cast<int>(std::clamp<std::int64_t>(wanted, 1, static_cast<std::int64_t>(multiprocessors) * kBlocksPerSm));
}

struct Sums {
  float rr;  // sum of r^2
  float rx;  // sum of r x
  float r;   // sum of r
};

__device__ __forceinline__ void accumulate(float x, float y, float w, float b, Sums& s) {
  const float r = fmaf(w, x, b) - y;  // the forward pass (04's fmaf) and the residual
  s.rr = fmaf(r, r, s.rr);
  s.rx = fmaf(r, x, s.rx);
  s.r += r;
}

__device__ __forceinline__ void accumulate4(float4 x, float4 y, float w, float b, Sums& s) {
  accumulate(x.x, y.x, w, b, s);
  accumulate(x.y, y.y, w, b, s);
  accumulate(x.z, y.z, w, b, s);
  accumulate(x.w, y.w, w, b, s);
}

// The sums of thread t of T over n points, read as 16-byte float4s (x and y must be 16-byte
// aligned: cudaMalloc gives 256). kUnroll float4s of x and of y are loaded before any is used,
// so each thread keeps 4 loads in flight. The last n % 4 points go to threads 0..2, one each.
__device__ __forceinline__ Sums thread_sums(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n,
                                            float w, float b, std::int64_t t, std::int64_t T) {
  Sums s{0.0f, 0.0f, 0.0f};
  const std::int64_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  std::int64_t i = t;
  for (; i + T < n4; i += kUnroll * T) {
    const float4 xa = x4[i], ya = y4[i], xb = x4[i + T], yb = y4[i + T];
    accumulate4(xa, ya, w, b, s);
    accumulate4(xb, yb, w, b, s);
  }
  if (i < n4) accumulate4(x4[i], y4[i], w, b, s);
  const std::int64_t tail = 4 * n4 + t;
  if (tail < n) accumulate(x[tail], y[tail], w, b, s);
  return s;
}

__device__ __forceinline__ Sums warp_sums(Sums s) {
  for (int offset = 16; offset > 0; offset /= 2) {
    s.rr += __shfl_down_sync(0xffffffffu, s.rr, offset);
    s.rx += __shfl_down_sync(0xffffffffu, s.rx, offset);
    s.r += __shfl_down_sync(0xffffffffu, s.r, offset);
  }
  return s;
}

// The three sums over the block, valid in thread 0: a shuffle tree per warp, the warp totals
// through shared memory, a shuffle tree in warp 0. Fixed shape, so fixed rounding. Every thread
// of the block must call it; it ends with a barrier so that it can be called again at once.
template <int kBlockThreads>
__device__ Sums block_sums(Sums s) {
  static_assert(kBlockThreads % 32 == 0 && kBlockThreads <= 1024, "whole warps, at most 32");
  __shared__ Sums warp_totals[kBlockThreads / 32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  s = warp_sums(s);
  if (lane == 0) warp_totals[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < kBlockThreads / 32 ? warp_totals[lane] : Sums{0.0f, 0.0f, 0.0f};
    s = warp_sums(s);
  }
  __syncthreads();
  return s;
}

// Thread 0 writes its block's sums `s` (valid in thread 0) as the block's partials: rows rr, rx
// and r, `stride` apart, column blockIdx.x.
__device__ __forceinline__ void write_partials(const Sums& s, float* partials, int stride) {
  if (threadIdx.x != 0) return;
  partials[blockIdx.x] = s.rr;
  partials[stride + blockIdx.x] = s.rx;
  partials[2 * stride + blockIdx.x] = s.r;
}

// The last-block pattern (chapter 05's variant 4), after write_partials: each block counts itself
// in *done_count, and the block counted last, whichever it is, gets true in every thread: it may
// read every block's partials (reduce_partials), and must set *done_count back to 0 for the next
// launch. Every thread of the block must call it.
__device__ __forceinline__ bool counted_last(unsigned* done_count) {
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    __threadfence();  // release: this block's partials before its count
    is_last = atomicAdd(done_count, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last) __threadfence();  // acquire: every counted block's partials after the count
  return is_last;
}

// One block of kBlockThreads adds `count` block partials (rows rr, rx, r, `stride` apart) in a
// fixed order.
// __ldcg reads at L2: the partials were written by other multiprocessors in this launch.
template <int kBlockThreads = kThreads>
__device__ Sums reduce_partials(const float* partials, int count, int stride) {
  Sums s{0.0f, 0.0f, 0.0f};
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    s.rr += __ldcg(partials + j);
    s.rx += __ldcg(partials + stride + j);
    s.r += __ldcg(partials + 2 * stride + j);
  }
  return block_sums<kBlockThreads>(s);
}

}  // namespace workbook::fused

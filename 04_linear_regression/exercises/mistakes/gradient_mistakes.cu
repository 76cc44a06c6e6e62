// Planted mistakes for exercise 04 gradient: a whole attempt, right unless one PLANTED_<NAME> is
// defined, and then wrong in the way a first attempt often is. The checker's tests build it once
// per mistake and expect each to be caught with its hint (CMakeLists.txt names the words).
#include "gradient.h"

#include "ceil_div.h"
#include "cuda_check.h"

#include <algorithm>

namespace workbook::linear_regression::exercise {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

// The sum of v over the block, in thread 0.
__device__ float block_total(float v) {
#if defined(PLANTED_SHARED_RACE)
  // Every thread adds into one shared float: the additions overwrite each other.
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  total += v;
  __syncthreads();
  v = total;
  __syncthreads();
  return v;
#else
  __shared__ float per_warp[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = v;
#if !defined(PLANTED_NO_SYNC)  // without it, warp 0 reads totals the other warps have not written
  __syncthreads();
#endif
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? per_warp[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  __syncthreads();  // per_warp is written again by the next call
  return v;
#endif
}

__global__ void grad_partials_kernel(const float* pred, const float* y, const float* x, std::int64_t n,
                                     float* partials, float* grads) {
  float rx = 0.0f;
  float r = 0.0f;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
#if defined(PLANTED_TAIL)
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i + 1 < n; i += stride) {
#else
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
#endif
    const float ri = pred[i] - y[i];
    rx += ri * x[i];
    r += ri;
  }
  rx = block_total(rx);
  r = block_total(r);
  if (threadIdx.x != 0) return;
#if defined(PLANTED_ATOMICS)
  // One float atomicAdd per block: the blocks' order, so the rounding, changes from run to run.
  const float scale = static_cast<float>(2.0 / static_cast<double>(n));
  atomicAdd(&grads[0], rx * scale);
  atomicAdd(&grads[1], r * scale);
#else
  (void)grads;
  partials[blockIdx.x] = rx;
  partials[gridDim.x + blockIdx.x] = r;
#endif
}

#if !defined(PLANTED_ATOMICS)  // the atomics add into grads directly: no second pass
__global__ void finish_kernel(const float* partials, int blocks, float scale, float* grads) {
  for (int k = 0; k < 2; ++k) {
    float sum = 0.0f;
#if defined(PLANTED_FIRST_BLOCK)
    // Only the first block's partial: the others' sums never arrive.
    if (threadIdx.x == 0) sum = partials[k * blocks];
#else
    for (int j = threadIdx.x; j < blocks; j += blockDim.x) sum += partials[k * blocks + j];
#endif
    sum = block_total(sum);
    if (threadIdx.x == 0) grads[k] = sum * scale;
  }
}
#endif

}  // namespace

void mse_backward(const float* pred, const float* y, const float* x, std::int64_t n, float* partials, float* grads,
                  cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min<std::int64_t>(ceil_div(n, kThreads), kMaxBlocks));
#if defined(PLANTED_ATOMICS)
  CUDA_CHECK(cudaMemsetAsync(grads, 0, 2 * sizeof(float), stream));
  grad_partials_kernel<<<blocks, kThreads, 0, stream>>>(pred, y, x, n, partials, grads);
  CUDA_CHECK_LAUNCH();
#else
  grad_partials_kernel<<<blocks, kThreads, 0, stream>>>(pred, y, x, n, partials, grads);
  CUDA_CHECK_LAUNCH();
#if defined(PLANTED_SCALE)
  const double scale = 1.0 / static_cast<double>(n);  // the loss's 1/n, without the 2 of d(r^2)/dr
#else
  const double scale = 2.0 / static_cast<double>(n);
#endif
  finish_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, static_cast<float>(scale), grads);
  CUDA_CHECK_LAUNCH();
#endif
}

}  // namespace workbook::linear_regression::exercise

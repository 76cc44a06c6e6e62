// Exercise 04 gradient: the MSE gradient with a block reduction (the contract: gradient.h).
//
// Write the two kernels below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 04 gradient
// The chapter's own answer is launch_mse_backward in linear_regression.cu (mse_grad_partials_kernel,
// block_sum and finish_sums_kernel): read it after your attempt passes, or when you are stuck.
#include "gradient.h"

#include "ceil_div.h"
#include "cuda_check.h"

#include <algorithm>

namespace workbook::linear_regression::exercise {
namespace {

constexpr int kThreads = 256;   // threads per block in both kernels
constexpr int kMaxBlocks = 1024;  // first pass: at most this many blocks (kPartialFloats / 2)

// TODO(exercise): first pass. Each block adds r_i * x_i and r_i (r_i = pred_i - y_i) over its
// grid-stride slice (i = blockIdx.x * blockDim.x + threadIdx.x, then += gridDim.x * blockDim.x,
// while i < n), reduces both sums over the block, and one thread writes them:
//   partials[blockIdx.x] = the block's sum of r x;  partials[gridDim.x + blockIdx.x] = its sum of r.
// Hint: a warp adds its 32 values with __shfl_down_sync; lane 0 of each warp writes its total to
// __shared__ memory; after a __syncthreads() warp 0 adds those totals.
__global__ void grad_partials_kernel(const float* pred, const float* y, const float* x, std::int64_t n,
                                     float* partials) {
}

// Second pass, one block: grads[k] = scale * (the sum of partials[k * blocks .. k * blocks + blocks)),
// for k = 0 (w) and 1 (b). Add them in a fixed order (each thread a fixed strided set, then the
// same block reduction), so that every run gives the same bits.
__global__ void finish_kernel(const float* partials, int blocks, float scale, float* grads) {
}

}  // namespace

void mse_backward(const float* pred, const float* y, const float* x, std::int64_t n, float* partials, float* grads,
                  cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min<std::int64_t>(ceil_div(n, kThreads), kMaxBlocks));
  grad_partials_kernel<<<blocks, kThreads, 0, stream>>>(pred, y, x, n, partials);
  CUDA_CHECK_LAUNCH();
  finish_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, static_cast<float>(2.0 / n), grads);
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::linear_regression::exercise

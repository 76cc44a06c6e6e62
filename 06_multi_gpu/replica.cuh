// replica.cuh: the device half of one GPU's epoch, shared by the kernels of replica.cu (the
// sums, then the step, with the all-reduce between them) and of one_shot_exchange.cu (the whole
// epoch in one kernel, the exchange inside). CUDA only.
#pragma once

#include "fused_sums.cuh"

#include <cstdint>

namespace workbook::multi_gpu {

// Chapter 05's fused pass without the step: every block writes its partials, and the last block
// to be counted adds them in block order and resets the counter. Returns true in that block only,
// with the shard's three sums in `total` (valid in thread 0).
__device__ __forceinline__ bool shard_sums(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n,
                                           const float* params, float* partials, unsigned* done_count, fused::Sums& total) {
  const float w = params[0];
  const float b = params[1];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const fused::Sums s =
      fused::block_sums<fused::kThreads>(fused::thread_sums(x, y, n, w, b, t, static_cast<std::int64_t>(gridDim.x) * blockDim.x));
  const int stride = static_cast<int>(gridDim.x);
  fused::write_partials(s, partials, stride);
  if (!fused::counted_last(done_count)) return false;  // common/fused_sums.cuh: 05's last-block pattern
  total = fused::reduce_partials(partials, stride, stride);
  if (threadIdx.x == 0) *done_count = 0;
  return true;
}

// 05's apply_step on the summed sums: the same float operations on every replica, so the same bits
// of w and b everywhere.
__device__ __forceinline__ void sgd_step(const float sums[3], float* params, float* losses, int epoch, float lr,
                                         float inv_n, float two_inv_n) {
  losses[epoch] = sums[0] * inv_n;
  const float grad_w = sums[1] * two_inv_n;
  const float grad_b = sums[2] * two_inv_n;
  params[0] -= lr * grad_w;
  params[1] -= lr * grad_b;
}

}  // namespace workbook::multi_gpu

// Exercise 05 last_block: a whole epoch in one launch, finished by the last block to arrive (the
// contract: last_block.h).
//
// Write the end of the kernel below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 05 last_block
// The chapter's own answer is fused_sums_kernel<true> in fused_kernels.cu, with counted_last in
// common/fused_sums.cuh (read it after your attempt passes, or when you are stuck).
#include "last_block.h"

#include "cuda_check.h"
#include "fused_sums.cuh"

#include <cuda_runtime.h>

namespace workbook::fused::exercise {
namespace {

__global__ void __launch_bounds__(kThreads) fused_epoch_kernel(const float* x, const float* y, std::int64_t n,
                                                               float* params, float* losses, int epoch, float lr,
                                                               float* partials, unsigned* done_count) {
  // Given: every block's three sums (rr, rx, r) into partials, rows gridDim.x apart (fused_sums.cuh).
  const float w = params[0], b = params[1];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Sums s = block_sums<kThreads>(thread_sums(x, y, n, w, b, t, static_cast<std::int64_t>(gridDim.x) * blockDim.x));
  write_partials(s, partials, gridDim.x);

  // TODO(exercise): the last block to finish steps.
  // 1. Thread 0 counts its block: atomicAdd(done_count, 1) returns the count BEFORE its own, so
  //    the last block sees gridDim.x - 1. Before counting, __threadfence(): the block's partials
  //    must be visible to the whole GPU before its count is.
  // 2. Tell the block's other threads (a __shared__ flag, then __syncthreads()); only the last
  //    block goes on, after its own __threadfence().
  // 3. The last block adds all gridDim.x partials (reduce_partials(partials, gridDim.x, gridDim.x)),
  //    and thread 0 writes losses[epoch] = rr / n, steps w and b, and sets *done_count = 0.
}

}  // namespace

void fused_epoch(const float* x, const float* y, std::int64_t n, float* params, float* losses, int epoch, float lr,
                 float* partials, unsigned* done_count, cudaStream_t stream) {
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const int blocks = fused_blocks(n, multiprocessors);  // at most 4 a multiprocessor: <= 1024 here
  fused_epoch_kernel<<<blocks, kThreads, 0, stream>>>(x, y, n, params, losses, epoch, lr, partials, done_count);
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::fused::exercise

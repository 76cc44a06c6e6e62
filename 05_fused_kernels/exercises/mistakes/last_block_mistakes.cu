// Planted mistakes for exercise 05 last_block: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "last_block.h"

#include "cuda_check.h"
#include "fused_sums.cuh"

#include <cuda_runtime.h>

namespace workbook::fused::exercise {
namespace {

__device__ void step(const Sums& total, float* params, float* losses, int epoch, float lr, std::int64_t n) {
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(n));
  const float two_inv_n = static_cast<float>(2.0 / static_cast<double>(n));
  losses[epoch] = total.rr * inv_n;
  params[0] -= lr * (total.rx * two_inv_n);
  params[1] -= lr * (total.r * two_inv_n);
}

// After write_partials: the block counted last adds every block's partials and steps.
#if !defined(PLANTED_TWO_KERNELS)
__device__ void finish_if_last(float* params, float* losses, int epoch, float lr, std::int64_t n, float* partials,
                               unsigned* done_count) {
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    __threadfence();
#if defined(PLANTED_OFF_BY_ONE)
    is_last = atomicAdd(done_count, 1u) == gridDim.x;  // atomicAdd returns the count before this block's
#else
    is_last = atomicAdd(done_count, 1u) == gridDim.x - 1;
#endif
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
#if defined(PLANTED_ATOMICS)
  const Sums total{__ldcg(&partials[0]), __ldcg(&partials[1]), __ldcg(&partials[2])};
  if (threadIdx.x != 0) return;
#elif defined(PLANTED_NO_SYNC)
  // Each thread adds a strided share of the partials into shared memory, and thread 0 adds the
  // shares up without a __syncthreads() between: it reads slots the other warps have not written.
  __shared__ float shares[3][kThreads];
  Sums mine{0.0f, 0.0f, 0.0f};
  for (unsigned j = threadIdx.x; j < gridDim.x; j += blockDim.x) {
    mine.rr += __ldcg(partials + j);
    mine.rx += __ldcg(partials + gridDim.x + j);
    mine.r += __ldcg(partials + 2 * gridDim.x + j);
  }
  shares[0][threadIdx.x] = mine.rr;
  shares[1][threadIdx.x] = mine.rx;
  shares[2][threadIdx.x] = mine.r;
  if (threadIdx.x != 0) return;
  Sums total{0.0f, 0.0f, 0.0f};
  for (int k = 0; k < kThreads; ++k) {
    total.rr += shares[0][k];
    total.rx += shares[1][k];
    total.r += shares[2][k];
  }
#else
  const Sums total = reduce_partials(partials, gridDim.x, gridDim.x);
  if (threadIdx.x != 0) return;
#endif
  step(total, params, losses, epoch, lr, n);
#if !defined(PLANTED_NO_RESET)  // without it, the next epoch's count starts at gridDim.x
  *done_count = 0;
#endif
}
#endif

__global__ void __launch_bounds__(kThreads) fused_epoch_kernel(const float* x, const float* y, std::int64_t n,
                                                               float* params, float* losses, int epoch, float lr,
                                                               float* partials, unsigned* done_count) {
  const float w = params[0], b = params[1];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Sums s = block_sums<kThreads>(thread_sums(x, y, n, w, b, t, static_cast<std::int64_t>(gridDim.x) * blockDim.x));
#if defined(PLANTED_ATOMICS)
  // Each block adds its sums into three floats: the order of the float additions is the order
  // in which the blocks finish.
  if (threadIdx.x == 0) {
    atomicAdd(&partials[0], s.rr);
    atomicAdd(&partials[1], s.rx);
    atomicAdd(&partials[2], s.r);
  }
#else
  write_partials(s, partials, gridDim.x);
#endif
#if defined(PLANTED_TWO_KERNELS)
  (void)losses, (void)epoch, (void)lr, (void)done_count;  // the step is a second launch
#else
  finish_if_last(params, losses, epoch, lr, n, partials, done_count);
#endif
}

#if defined(PLANTED_TWO_KERNELS)
// A second launch for the step: right, but two launches an epoch.
__global__ void step_kernel(const float* partials, int blocks, float* params, float* losses, int epoch, float lr,
                            std::int64_t n) {
  const Sums total = reduce_partials(partials, blocks, blocks);
  if (threadIdx.x == 0) step(total, params, losses, epoch, lr, n);
}
#endif

}  // namespace

void fused_epoch(const float* x, const float* y, std::int64_t n, float* params, float* losses, int epoch, float lr,
                 float* partials, unsigned* done_count, cudaStream_t stream) {
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const int blocks = fused_blocks(n, multiprocessors);
#if defined(PLANTED_ATOMICS)
  CUDA_CHECK(cudaMemsetAsync(partials, 0, 3 * sizeof(float), stream));
#endif
  fused_epoch_kernel<<<blocks, kThreads, 0, stream>>>(x, y, n, params, losses, epoch, lr, partials, done_count);
  CUDA_CHECK_LAUNCH();
#if defined(PLANTED_TWO_KERNELS)
  step_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, params, losses, epoch, lr, n);
  CUDA_CHECK_LAUNCH();
#endif
}

}  // namespace workbook::fused::exercise

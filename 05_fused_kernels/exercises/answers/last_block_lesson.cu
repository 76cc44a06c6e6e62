// The worked answer of exercise 05 last_block: the lesson's variant 4 (launch_last_block_epoch in
// fused_kernels.cu) behind the exercise's signature (the checker's test: it must print "correct").
#include "last_block.h"

#include "cuda_check.h"
#include "fused_kernels.h"
#include "fused_sums.cuh"

namespace workbook::fused::exercise {

void fused_epoch(const float* x, const float* y, std::int64_t n, float* params, float* losses, int epoch, float lr,
                 float* partials, unsigned* done_count, cudaStream_t stream) {
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  launch_last_block_epoch(x, y, n, params, losses, epoch, lr, fused_blocks(n, multiprocessors), partials, done_count,
                          stream);
}

}  // namespace workbook::fused::exercise

// Exercise 04 forward: the model's forward pass, one thread per element of a capped grid (the
// contract: forward.h).
//
// Write the kernel below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 04 forward
// The chapter's own answer is forward_kernel and launch_forward in linear_regression.cu.
#include "forward.h"

#include "ceil_div.h"
#include "cuda_check.h"

#include <algorithm>

namespace workbook::linear_regression::exercise {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 4096;  // the grid is capped: 4096 x 256 threads, about 1M

// TODO(exercise): pred[i] = w * x[i] + b for every i < n, with w = params[0] and b = params[1].
// The grid has at most 4096 x 256 threads, and the chapter's run has 5M points.
// Hint: start at i = blockIdx.x * blockDim.x + threadIdx.x and go on by gridDim.x * blockDim.x
// (a grid-stride loop) while i < n; keep i a std::int64_t.
__global__ void forward_kernel(const float* x, const float* params, float* pred, std::int64_t n) {
}

}  // namespace

void forward(const float* x, const float* params, float* pred, std::int64_t n, cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min(ceil_div(n, static_cast<std::int64_t>(kThreads)), kMaxBlocks));
  forward_kernel<<<blocks, kThreads, 0, stream>>>(x, params, pred, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::linear_regression::exercise

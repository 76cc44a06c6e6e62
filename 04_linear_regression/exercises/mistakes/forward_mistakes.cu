// Planted mistakes for exercise 04 forward: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "forward.h"

#include "ceil_div.h"
#include "cuda_check.h"

#include <algorithm>

namespace workbook::linear_regression::exercise {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 4096;

__global__ void forward_kernel(const float* x, const float* params, float* pred, std::int64_t n) {
#if defined(PLANTED_SWAPPED)
  const float w = params[1];  // b read as w, and w as b
  const float b = params[0];
#else
  const float w = params[0];
  const float b = params[1];
#endif
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
#if defined(PLANTED_NO_STRIDE)
  if (first < n) pred[first] = w * x[first] + b;  // one element a thread: the grid ends at ~1M
#elif defined(PLANTED_TAIL)
  for (std::int64_t i = first; i < n - 1; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    pred[i] = w * x[i] + b;
  }
#elif defined(PLANTED_OVERRUN)
  for (std::int64_t i = first; i <= n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    pred[i] = w * x[i] + b;  // i == n reads and writes one element past the end
  }
#else
  for (std::int64_t i = first; i < n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    pred[i] = w * x[i] + b;
  }
#endif
}

}  // namespace

void forward(const float* x, const float* params, float* pred, std::int64_t n, cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min(ceil_div(n, static_cast<std::int64_t>(kThreads)), kMaxBlocks));
  forward_kernel<<<blocks, kThreads, 0, stream>>>(x, params, pred, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::linear_regression::exercise

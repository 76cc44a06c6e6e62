// streams_events.cu: the compute-stage kernel, the spin kernel, their launchers and CPU twins.
//
// Nothing here knows about streams beyond taking one: the scheduling lessons live in pipeline.cpp.
#include "streams_events.cuh"

#include "cuda_check.h"
#include "globaltimer.cuh"

#include <cmath>

namespace streams_events {
namespace {

constexpr int kBlock = 256;
constexpr int kPerThread = 4;  // independent chains per thread
constexpr int kPerBlock = kBlock * kPerThread;

// Each thread runs kPerThread independent fmaf chains (elements base, base + 256, ...: every load
// and store stays coalesced across the warp). One chain per thread left the FP32 pipes half idle:
// the loop's own add, compare and branch took issue slots between the dependent fmaf. With four
// chains per loop step and the step unrolled, fmaf dominates the instruction stream.
__global__ void transform_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n,
                                 int iterations) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kPerBlock + threadIdx.x;
  float x[kPerThread], y[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * kBlock;
    x[j] = i < n ? in[i] : 0.0f;
    y[j] = x[j];
  }
#pragma unroll 4
  for (int k = 0; k < iterations; ++k) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) y[j] = fmaf(y[j], kDecay, x[j]);
  }
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * kBlock;
    if (i < n) out[i] = y[j];
  }
}

__global__ void spin_kernel(long long nanoseconds, unsigned long long* elapsed_out) {
  const unsigned long long start = workbook::global_timer_ns();
  unsigned long long now = start;
  while (now - start < static_cast<unsigned long long>(nanoseconds)) now = workbook::global_timer_ns();
  if (elapsed_out != nullptr) *elapsed_out = now - start;
}

}  // namespace

float transform_cpu(float x, int iterations) {
  float y = x;
  for (int k = 0; k < iterations; ++k) y = std::fma(y, kDecay, x);  // float overload: one rounding, as fmaf on the GPU
  return y;
}

void transform_cpu(const float* in, float* out, std::size_t n, int iterations) {
  for (std::size_t i = 0; i < n; ++i) out[i] = transform_cpu(in[i], iterations);
}

void launch_transform(const float* in, float* out, std::size_t n, int iterations, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>((n + kPerBlock - 1) / kPerBlock);
  transform_kernel<<<blocks, kBlock, 0, stream>>>(in, out, n, iterations);
  CUDA_CHECK_LAUNCH();
}

void launch_spin(long long nanoseconds, unsigned long long* elapsed_out, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(nanoseconds, elapsed_out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace streams_events

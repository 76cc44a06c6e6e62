// regression_data.cu: the data kernel of the chapters' regression.
#include "regression_data.h"

#include "cuda_check.h"
#include "curand_generator.h"
#include "gpu_memory.h"

#include <algorithm>
#include <string>

namespace workbook::regression {
namespace {

constexpr int kThreads = 256;

__global__ void make_data_kernel(float* x, float* y, const float* noise, float sigma, std::int64_t first,
                                 std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    // No contraction into an FMA: x_at and y_clean on the host round the same way.
    const float xi = __fmul_rn(static_cast<float>(first + i), kXStep);
    float yi = __fadd_rn(__fmul_rn(kTrueW, xi), kTrueB);
    if (noise != nullptr) yi = __fadd_rn(yi, __fmul_rn(sigma, noise[first + i]));
    x[i] = xi;
    y[i] = yi;
  }
}

}  // namespace

DeviceBuffer<float> make_noise_on_gpu(const Config& config, cudaStream_t stream) {
  if (config.noise <= 0.0) return {};
  DeviceBuffer<float> noise(static_cast<std::size_t>(noise_count(config.points)));
  CurandGenerator generator(RngLocation::kDevice, config.seed, stream);
  generator.normal(noise.data(), noise.size(), 0.0f, 1.0f);
  return noise;
}

void launch_make_data(float* x, float* y, const float* noise, double sigma, std::int64_t first, std::int64_t count,
                      cudaStream_t stream) {
  if (count <= 0) return;
  const int blocks = static_cast<int>(std::clamp<std::int64_t>((count + kThreads - 1) / kThreads, 1, 8192));
  make_data_kernel<<<blocks, kThreads, 0, stream>>>(x, y, noise, static_cast<float>(sigma), first, count);
  CUDA_CHECK_LAUNCH();
}

__global__ void reset_params_kernel(float* params) {
  params[0] = kInitialW;
  params[1] = kInitialB;
}

void launch_reset_params(float* params, cudaStream_t stream) {
  reset_params_kernel<<<1, 1, 0, stream>>>(params);
  CUDA_CHECK_LAUNCH();
}

Dataset copy_dataset_to_host(const float* x, const float* y, std::int64_t points) {
  require_host_memory("--points " + std::to_string(points) + " (the data read back for the reference)",
                      ByteCount().add(points, sizeof(float), 2));
  Dataset d;
  d.split = split_of(points);
  d.x.resize(static_cast<std::size_t>(points));
  d.y.resize(static_cast<std::size_t>(points));
  CUDA_CHECK(cudaMemcpy(d.x.data(), x, d.x.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(d.y.data(), y, d.y.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return d;
}

}  // namespace workbook::regression

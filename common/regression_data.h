// regression_data.h: the regression's X and y made on the GPU, as chapters 04, 05 and 06 train on
// them; make_dataset_cpu (regression_problem.h) is the host twin, equal bit for bit without noise
// (with --noise, the tests hold the two within a relative 1e-6).
//
//   DeviceBuffer<float> noise = make_noise_on_gpu(config, stream);     // empty when config.noise == 0
//   launch_make_data(x, y, noise.data(), config.noise, 0, config.points, stream);
//   launch_reset_params(params, stream);                              // w, b = 0.83, 0.7645
//   Dataset d = copy_dataset_to_host(x, y, config.points);            // for the float64 reference
//
// A shard (chapter 06) passes its first global index and length: its points are the same bits
// as the whole set's. Host-only declarations: g++ compiles this header, the kernel is in the .cu.
#pragma once

#include "device_buffer.h"
#include "regression_problem.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace workbook::regression {

// The whole noise vector of config (cuRAND's device Philox4x32-10, config.seed, noise_count(points)
// normals), or an empty buffer when config.noise is 0. Queued on `stream`.
DeviceBuffer<float> make_noise_on_gpu(const Config& config, cudaStream_t stream);

// x[i] = X_{first + i}, y[i] = 0.7 X + 0.3 (+ sigma * noise[first + i] when noise is not null),
// for i in [0, count). Explicit roundings, so the host's make_dataset_cpu matches bit for bit
// (without noise).
void launch_make_data(float* x, float* y, const float* noise, double sigma, std::int64_t first, std::int64_t count,
                      cudaStream_t stream);

// params[0], params[1] = kInitialW, kInitialB: the start of every training run. Queued on `stream`.
void launch_reset_params(float* params, cudaStream_t stream);

// The GPU's `points` x and y back on the host, with the split of that many points, for the float64
// reference (synchronizes). Asks for the host memory first: a size too large is one line.
Dataset copy_dataset_to_host(const float* x, const float* y, std::int64_t points);

}  // namespace workbook::regression

// linear_regression.cuh: the GPU side of chapter 04, shaped like PyTorch's training loop: one kernel
// for the forward pass, one reduction for the MSE loss, one for the two gradients, one SGD step.
//
//   workbook::Stream stream;
//   workbook::regression::require_gpu_memory(config.points, config.epochs);  // before allocating
//   workbook::regression::GpuRegression gpu(config, stream.get());          // data made on the GPU
//   TrainingResult got = gpu.train(print_loss, &step_times);
//
// Host-only declarations with plain types: g++ compiles this header; the kernels live in the .cu.
#pragma once

#include "device_buffer.h"
#include "gpu_memory.h"
#include "regression.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace workbook::regression {

// GPU memory one run needs: x, y, the predictions, the noise while the data is made, the
// reduction partials and the per-epoch losses.
// The count saturates rather than wrapping for an absurd --points.
ByteCount gpu_bytes_needed(std::int64_t points, int epochs);

// Throws GpuMemoryError (exit 1) with "--points N needs X MiB of GPU memory, but only Y MiB of
// Z MiB are free on device D" when the current device cannot hold the run (common/gpu_memory.h).
void require_gpu_memory(std::int64_t points, int epochs);

// Blocks of the first reduction pass over n terms. It depends on n only, so the order of every
// float addition, and with it every bit of w and b, is the same on any GPU and in every run.
int reduction_blocks(std::int64_t n);

// One launcher per kernel: grid math, launch, launch check. All asynchronous on `stream`.
// params = {w, b} and grads = {dL/dw, dL/db} live on the device.
void launch_forward(const float* x, const float* params, float* pred, std::int64_t n, cudaStream_t stream);
void launch_mse_loss(const float* pred, const float* y, std::int64_t n, float* partials, float* loss,
                     cudaStream_t stream);
void launch_mse_backward(const float* pred, const float* y, const float* x, std::int64_t n, float* partials,
                         float* grads, cudaStream_t stream);
void launch_sgd_step(float* params, const float* grads, float lr, cudaStream_t stream);

class GpuRegression {
 public:
  // Allocates on the current device and makes X and y there (common/regression_data.h).
  GpuRegression(const Config& config, cudaStream_t stream);

  // The GPU's data, copied to the host for the reference (synchronizes).
  Dataset copy_dataset() const;

  // Runs the epoch loop from w = 0.83, b = 0.7645. The only host synchronization inside the loop
  // is the loss read every print_every epochs; training_ms is CUDA-event time of the whole loop.
  // `steps`, when given, gets each step's median time (events between the kernels).
  TrainingResult train(const LossPrinter& print = {}, StepTimes* steps = nullptr);

  // A device-to-device copy of the training X (bytes read + written per ms): the bandwidth
  // ceiling the memory-bound steps are measured against.
  double copy_gbps();

 private:
  Config config_;
  Split split_;
  cudaStream_t stream_;
  DeviceBuffer<float> x_, y_, pred_, partials_, params_, grads_, losses_, test_mse_;
  PinnedBuffer<float> host_losses_, host_scalars_;
};

}  // namespace workbook::regression

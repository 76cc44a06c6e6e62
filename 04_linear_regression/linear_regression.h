// linear_regression.h: what chapter 04's lesson (linear_regression.cu) offers its bench and its
// tests: the CPU twins, one launcher per kernel, and the GPU training loop.
//
//   workbook::Stream stream;
//   workbook::linear_regression::require_gpu_memory(config.points, config.epochs);  // before allocating
//   workbook::linear_regression::GpuRegression gpu(config, stream.get());          // data made on the GPU
//   TrainingResult got = gpu.train(print_loss);
//
// Host-only declarations with plain types: g++ compiles this header. The problem itself (data,
// float64 reference, tolerances, the check) is common/regression_problem.h, shared with 05 and 06.
#pragma once

#include "common_options.h"
#include "device_buffer.h"
#include "gpu_memory.h"
#include "regression_problem.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

namespace workbook::linear_regression {
using namespace regression;  // the problem itself (Config, Dataset, the reference) is common/'s, shared with 05 and 06

// The flags the lesson and its bench share, one parse for both: --device cpu|N|cuda|cuda:N,
// --json, --quick, the problem's flags (--points ... --print-every), and part 2's --shuffle and
// --fill-threads, which need the program's batch flag (--batch-size, --batch-sizes).
struct RunOptions {
  CommonOptions common;
  DeviceChoice device;
  Config config;
  bool shuffle = false;  // part 2: the batches in a new order every epoch
  int fill_threads = 1;  // part 2: host threads filling pipeline 3's pinned ring
};
void add_run_options(CLI::App& app, RunOptions& o);
// After parsing: --quick's sizes (20,011 points, 60 epochs; explicit flags win), then every check
// of these flags (UsageError, before any CUDA call).
void check_run_options(const CLI::App& app, RunOptions& o, const std::string& batch_flag);

// Called with (epoch, loss) at every printed epoch (epoch % print_every == 0), as training goes.
using LossPrinter = std::function<void(int epoch, double loss)>;

// The CPU twins of the kernels, one per training step, in float32 like a float32 PyTorch model.
void forward_cpu(const float* x, float w, float b, float* pred, std::int64_t n);
float mse_loss_cpu(const float* pred, const float* y, std::int64_t n);
// The MSE of w, b on the test points (the last 20% of `data`), with the two twins above: how every
// CPU and mini-batch run of this chapter scores its result, outside its timed loop.
float test_mse_cpu(const Dataset& data, float w, float b);
void mse_backward_cpu(const float* pred, const float* y, const float* x, std::int64_t n, float* grad_w,
                      float* grad_b);
void sgd_step_cpu(float* param, float grad, float lr);

// The CPU version of the loop, from w = 0.83, b = 0.7645; training_ms is host-clock time.
TrainingResult train_cpu(const Dataset& data, const Config& config, const LossPrinter& print = {});

// Blocks of the first reduction pass over n terms. It depends on n only, so the order of every
// float addition, and with it every bit of w and b, is the same on any GPU and in every run.
int reduction_blocks(std::int64_t n);

// One launcher per kernel: grid math, launch, launch check. All asynchronous on `stream`.
// params = {w, b} and grads = {dL/dw, dL/db} live on the device; partials holds
// 2 * reduction_blocks(n) floats.
void launch_forward(const float* x, const float* params, float* pred, std::int64_t n, cudaStream_t stream);
void launch_mse_loss(const float* pred, const float* y, std::int64_t n, float* partials, float* loss,
                     cudaStream_t stream);
void launch_mse_backward(const float* pred, const float* y, const float* x, std::int64_t n, float* partials,
                         float* grads, cudaStream_t stream);
void launch_sgd_step(float* params, const float* grads, float lr, cudaStream_t stream);
// The parameters written on the device, as nn.Linear(1, 1, device='cuda') makes them, where
// GpuRegression::train copies them from the host, as model.to('cuda') does (the bench times both).
void launch_set_params(float* params, float w, float b, cudaStream_t stream);

// GPU memory one run needs: x, y, the predictions, the noise while the data is made, the
// reduction partials and the per-epoch losses. Saturates rather than wrapping for an absurd N.
ByteCount gpu_bytes_needed(std::int64_t points, int epochs);

// Throws GpuMemoryError (exit 1) with "--points N needs X MiB of GPU memory, but only Y MiB of
// Z MiB are free on device D" when the current device cannot hold the run (common/gpu_memory.h).
void require_gpu_memory(std::int64_t points, int epochs);

class GpuRegression {
 public:
  // Allocates on the current device and makes X and y there (common/regression_data.h).
  GpuRegression(const Config& config, cudaStream_t stream);

  // The GPU's data, copied to the host for the reference (synchronizes).
  Dataset copy_dataset() const;

  // Runs the epoch loop from w = 0.83, b = 0.7645. The only host synchronization inside the loop
  // is the loss read every print_every epochs; training_ms is CUDA-event time of the whole loop.
  TrainingResult train(const LossPrinter& print = {});

 private:
  Config config_;
  Split split_;
  cudaStream_t stream_;
  DeviceBuffer<float> x_, y_, pred_, partials_, params_, grads_, losses_, test_mse_;
  PinnedBuffer<float> host_losses_, host_scalars_;
};

}  // namespace workbook::linear_regression

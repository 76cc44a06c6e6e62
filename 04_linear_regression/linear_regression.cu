// linear_regression.cu: kernels, launchers and the epoch loop of the PyTorch-shaped GPU version.
//
// Each epoch launches, in autograd's order: forward (pred = w x + b), the MSE loss (two kernels:
// per-block partial sums, then one block that adds them in a fixed order), the backward pass (the
// two gradient sums, same two-pass shape) and the SGD step. No float atomics anywhere: the order
// of every addition is fixed by n alone, so two runs give bit-identical w and b.
#include "linear_regression.cuh"

#include "cuda_check.h"
#include "nvtx.h"
#include "regression_data.h"
#include "stats.h"
#include "stream.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace workbook::regression {
namespace {

constexpr int kThreads = 256;         // threads per block in every kernel here
constexpr int kItemsPerThread = 8;    // first reduction pass: about this many terms per thread
constexpr int kMaxReductionBlocks = 1024;  // one wave on an H100/H200 (132 SMs x 8 blocks)
constexpr int kMaxElementwiseBlocks = 8192;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int elementwise_blocks(std::int64_t n) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(ceil_div(n, kThreads), kMaxElementwiseBlocks)));
}

// The sum of v over the block, valid in thread 0: a warp shuffle tree, then warp 0 adds the warp
// totals. The shape is fixed, so the result is reproducible. Every thread of the block must call it.
__device__ float block_sum(float v) {
  __shared__ float warp_totals[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? warp_totals[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  __syncthreads();  // warp_totals may be written again by the next call
  return v;
}

// nn.Linear(1, 1) on a column of n inputs: what addmm computes for one weight and one bias.
__global__ void forward_kernel(const float* x, const float* params, float* pred, std::int64_t n) {
  const float w = params[0];
  const float b = params[1];
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    pred[i] = fmaf(w, x[i], b);
  }
}

// First pass of the loss: each block writes the sum of (pred - y)^2 over its grid-stride slice.
__global__ void mse_partials_kernel(const float* pred, const float* y, std::int64_t n, float* partials) {
  float sum = 0.0f;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float r = pred[i] - y[i];
    sum += r * r;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// First pass of the backward: dL/dpred_i = 2 r_i / n, so dL/dw = 2/n sum(r x) and dL/db = 2/n sum(r).
// Both sums in one pass over pred, y and x; the 2/n is applied once, in the second pass.
__global__ void mse_grad_partials_kernel(const float* pred, const float* y, const float* x, std::int64_t n,
                                         float* partials) {
  float sum_rx = 0.0f;
  float sum_r = 0.0f;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float r = pred[i] - y[i];
    sum_rx += r * x[i];
    sum_r += r;
  }
  sum_rx = block_sum(sum_rx);
  sum_r = block_sum(sum_r);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sum_rx;
    partials[gridDim.x + blockIdx.x] = sum_r;
  }
}

// Second pass, one block: out[k] = scale * (sum of partials[k * blocks .. k * blocks + blocks)),
// each thread taking a fixed strided set of partials, then the fixed block tree.
__global__ void finish_sums_kernel(const float* partials, int blocks, int sums, float scale, float* out) {
  for (int k = 0; k < sums; ++k) {
    float sum = 0.0f;
    for (int j = threadIdx.x; j < blocks; j += blockDim.x) sum += partials[k * blocks + j];
    sum = block_sum(sum);
    if (threadIdx.x == 0) out[k] = sum * scale;
  }
}

// torch.optim.SGD without momentum: p <- p - lr * grad, for w and b.
__global__ void sgd_step_kernel(float* params, const float* grads, float lr) {
  const int j = threadIdx.x;
  if (j < 2) params[j] -= lr * grads[j];
}

}  // namespace

int reduction_blocks(std::int64_t n) {
  return static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(ceil_div(n, kThreads * kItemsPerThread), kMaxReductionBlocks)));
}

ByteCount gpu_bytes_needed(std::int64_t points, int epochs) {
  ByteCount need;
  need.add(points, sizeof(float), 2);  // x, y
  need.add(points, sizeof(float));  // predictions
  need.add(noise_count(points), sizeof(float));  // the noise, while the data is made
  need.add(2 * kMaxReductionBlocks + 2 + 2 + 1, sizeof(float));  // partials, params, grads, test MSE
  need.add(epochs, sizeof(float));  // losses
  return need;
}

void require_gpu_memory(std::int64_t points, int epochs) {
  workbook::require_gpu_memory("--points " + std::to_string(points), gpu_bytes_needed(points, epochs));
}

void launch_forward(const float* x, const float* params, float* pred, std::int64_t n, cudaStream_t stream) {
  forward_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(x, params, pred, n);
  CUDA_CHECK_LAUNCH();
}

void launch_mse_loss(const float* pred, const float* y, std::int64_t n, float* partials, float* loss,
                     cudaStream_t stream) {
  const int blocks = reduction_blocks(n);
  mse_partials_kernel<<<blocks, kThreads, 0, stream>>>(pred, y, n, partials);
  CUDA_CHECK_LAUNCH();
  finish_sums_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, 1, static_cast<float>(1.0 / n), loss);
  CUDA_CHECK_LAUNCH();
}

void launch_mse_backward(const float* pred, const float* y, const float* x, std::int64_t n, float* partials,
                         float* grads, cudaStream_t stream) {
  const int blocks = reduction_blocks(n);
  mse_grad_partials_kernel<<<blocks, kThreads, 0, stream>>>(pred, y, x, n, partials);
  CUDA_CHECK_LAUNCH();
  finish_sums_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, 2, static_cast<float>(2.0 / n), grads);
  CUDA_CHECK_LAUNCH();
}

void launch_sgd_step(float* params, const float* grads, float lr, cudaStream_t stream) {
  sgd_step_kernel<<<1, 32, 0, stream>>>(params, grads, lr);
  CUDA_CHECK_LAUNCH();
}

GpuRegression::GpuRegression(const Config& config, cudaStream_t stream)
    : config_(config),
      split_(split_of(config.points)),
      stream_(stream),
      x_(config.points),
      y_(config.points),
      pred_(config.points),
      partials_(2 * kMaxReductionBlocks),
      params_(2),
      grads_(2),
      losses_(config.epochs),
      test_mse_(1),
      host_losses_(config.epochs),
      host_scalars_(3) {
  NvtxRange range("make data");
  const DeviceBuffer<float> noise = make_noise_on_gpu(config, stream_);
  launch_make_data(x_.data(), y_.data(), noise.data(), config.noise, 0, config.points, stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // before the noise is freed
}

Dataset GpuRegression::copy_dataset() const {
  Dataset d;
  d.split = split_;
  d.x.resize(config_.points);
  d.y.resize(config_.points);
  CUDA_CHECK(cudaMemcpy(d.x.data(), x_.data(), x_.bytes(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(d.y.data(), y_.data(), y_.bytes(), cudaMemcpyDeviceToHost));
  return d;
}

TrainingResult GpuRegression::train(const LossPrinter& print, StepTimes* steps) {
  NvtxRange range("train");
  const std::int64_t n = split_.train;
  const float lr = static_cast<float>(config_.lr);
  host_scalars_.data()[0] = kInitialW;
  host_scalars_.data()[1] = kInitialB;
  CUDA_CHECK(cudaMemcpyAsync(params_.data(), host_scalars_.data(), 2 * sizeof(float), cudaMemcpyHostToDevice, stream_));

  // Five timestamps per epoch when timing the steps: before forward, after forward, loss, backward, step.
  std::vector<Event> marks;
  if (steps != nullptr) {
    for (int i = 0; i < 5 * config_.epochs; ++i) marks.emplace_back(EventTiming::kEnabled);
  }
  auto mark = [&](int epoch, int k) {
    if (steps != nullptr) marks[5 * epoch + k].record(stream_);
  };
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled), losses_copied;

  TrainingResult r;
  int on_host = 0;  // losses [0, on_host) have been copied to host_losses_ and checked
  // Reads the losses copied so far and stops at the first divergent one.
  auto scan = [&](int up_to) {
    for (; on_host < up_to; ++on_host) {
      const double loss = host_losses_.data()[on_host];
      r.losses.push_back(loss);
      if (is_divergent(loss, r.losses.front())) {
        r.diverged_at = on_host;
        return;
      }
    }
  };

  start.record(stream_);
  int epoch = 0;
  for (; epoch < config_.epochs; ++epoch) {
    mark(epoch, 0);
    launch_forward(x_.data(), params_.data(), pred_.data(), n, stream_);
    mark(epoch, 1);
    launch_mse_loss(pred_.data(), y_.data(), n, partials_.data(), losses_.data() + epoch, stream_);
    mark(epoch, 2);
    const bool print_now = epoch % config_.print_every == 0;
    if (print_now) {  // queued before the backward pass, so the GPU keeps working while the host reads
      CUDA_CHECK(cudaMemcpyAsync(host_losses_.data() + on_host, losses_.data() + on_host,
                                 (epoch + 1 - on_host) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
      losses_copied.record(stream_);
    }
    launch_mse_backward(pred_.data(), y_.data(), x_.data(), n, partials_.data(), grads_.data(), stream_);
    mark(epoch, 3);
    launch_sgd_step(params_.data(), grads_.data(), lr, stream_);
    mark(epoch, 4);
    if (print_now) {  // the loop's only host synchronization, as loss.item() is in PyTorch
      losses_copied.synchronize();
      scan(epoch + 1);
      if (r.diverged_at) break;
      if (print) print(epoch, r.losses.back());
    }
  }
  stop.record(stream_);
  stop.synchronize();
  r.training_ms = elapsed_ms(start, stop);
  if (r.diverged_at) return r;

  const int run = epoch;
  CUDA_CHECK(cudaMemcpyAsync(host_losses_.data() + on_host, losses_.data() + on_host, (run - on_host) * sizeof(float),
                             cudaMemcpyDeviceToHost, stream_));
  // The test loss, outside the timed loop: forward and loss on the last 20% of the points.
  launch_forward(x_.data() + n, params_.data(), pred_.data() + n, split_.test, stream_);
  launch_mse_loss(pred_.data() + n, y_.data() + n, split_.test, partials_.data(), test_mse_.data(), stream_);
  CUDA_CHECK(cudaMemcpyAsync(host_scalars_.data(), params_.data(), 2 * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaMemcpyAsync(host_scalars_.data() + 2, test_mse_.data(), sizeof(float), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  scan(run);
  if (r.diverged_at) return r;
  r.w = host_scalars_.data()[0];
  r.b = host_scalars_.data()[1];
  r.test_mse = host_scalars_.data()[2];

  if (steps != nullptr) {
    std::vector<double> t[4];
    for (int e = 0; e < run; ++e) {
      for (int k = 0; k < 4; ++k) t[k].push_back(elapsed_ms(marks[5 * e + k], marks[5 * e + k + 1]));
    }
    *steps = StepTimes{median(t[0]), median(t[1]), median(t[2]), median(t[3])};
  }
  return r;
}

double GpuRegression::copy_gbps() {
  const std::size_t bytes = split_.train * sizeof(float);
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    start.record(stream_);
    CUDA_CHECK(cudaMemcpyAsync(pred_.data(), x_.data(), bytes, cudaMemcpyDeviceToDevice, stream_));
    stop.record(stream_);
    stop.synchronize();
    if (i >= 2) ms.push_back(elapsed_ms(start, stop));  // the first two are warm-up
  }
  return 2.0 * bytes / (median(ms) * 1e6);
}

}  // namespace workbook::regression

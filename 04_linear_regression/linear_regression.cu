// linear_regression.cu: chapter 04's lesson. The article's PyTorch regression (y = w*X + b,
// nn.Linear(1, 1), MSELoss, SGD, 5M points, 200 epochs) rebuilt with one CUDA kernel for each
// thing autograd launches per epoch: forward, the MSE loss, the backward pass, the SGD step.
// Read it beside "Phase 3: Performance Comparison for PyTorch and CUDA", section "Detailed Model
// Implementation", part 1.
//
// In reading order: the CPU twins of the four steps and the CPU loop; the kernels, each with its
// launcher; the GPU loop (GpuRegression::train); then the program: reference, check, time, table.
//
//   linear_regression                  5M points, 200 epochs on cuda:0
//   linear_regression --device cpu     the same loop on one CPU core, the twins only
//   linear_regression --lr 1.0         "diverged at epoch 4", exit 1
//
// Every reduction is deterministic: a fixed number of blocks (a function of n alone), a fixed
// tree in each, one block adding the partials in order, no float atomics. So two runs give
// bit-identical w and b, and the program checks that they do. linear_regression_bench
// (bench_regression.cpp) times each step of an epoch against the copy ceiling.
#include "linear_regression.h"

#include "ceil_div.h"
#include "cli.h"
#include "cuda_check.h"
#include "nvtx.h"
#include "regression_cli.h"
#include "regression_data.h"
#include "stream.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace workbook::linear_regression {

// ---------------------------------------------------------------------------------------------
// The CPU twins: the four steps in float32, one function each, and the loop that calls them.
namespace {

// Float32 sum as the CPU version computes it: 8 lanes (vectorizable) over blocks of 4096 terms,
// then the block totals in order. Deterministic, and its error stays far below the tolerances.
template <class Term>
float float_sum(std::int64_t n, Term term) {
  constexpr std::int64_t kBlock = 4096;
  float total = 0.0f;
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t end = std::min(n, start + kBlock);
    float lane[8] = {};
    std::int64_t i = start;
    for (; i + 8 <= end; i += 8) {
      for (int j = 0; j < 8; ++j) lane[j] += term(i + j);
    }
    for (; i < end; ++i) lane[0] += term(i);
    total += ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  return total;
}

}  // namespace

void forward_cpu(const float* x, float w, float b, float* pred, std::int64_t n) {
  // A product and a sum (x86-64 without -mfma has no fused multiply-add; a libm fmaf call per
  // element would cost more than the whole epoch). The kernel fuses them: 1 ulp apart at most.
  for (std::int64_t i = 0; i < n; ++i) pred[i] = w * x[i] + b;
}

float mse_loss_cpu(const float* pred, const float* y, std::int64_t n) {
  const float sum = float_sum(n, [&](std::int64_t i) {
    const float r = pred[i] - y[i];
    return r * r;
  });
  return sum / static_cast<float>(n);
}

void mse_backward_cpu(const float* pred, const float* y, const float* x, std::int64_t n, float* grad_w,
                      float* grad_b) {
  const float scale = 2.0f / static_cast<float>(n);  // d/dpred of mean((pred - y)^2)
  *grad_w = scale * float_sum(n, [&](std::int64_t i) { return (pred[i] - y[i]) * x[i]; });
  *grad_b = scale * float_sum(n, [&](std::int64_t i) { return pred[i] - y[i]; });
}

void sgd_step_cpu(float* param, float grad, float lr) { *param -= lr * grad; }

float test_mse_cpu(const Dataset& data, float w, float b) {
  const std::int64_t n = data.split.train;
  std::vector<float> pred(static_cast<std::size_t>(data.split.test));
  forward_cpu(data.x.data() + n, w, b, pred.data(), data.split.test);
  return mse_loss_cpu(pred.data(), data.y.data() + n, data.split.test);
}

TrainingResult train_cpu(const Dataset& data, const Config& config, const LossPrinter& print) {
  const std::int64_t n = data.split.train;
  const float lr = static_cast<float>(config.lr);
  std::vector<float> pred(static_cast<std::size_t>(n));
  float w = kInitialW, b = kInitialB;
  TrainingResult r;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    forward_cpu(data.x.data(), w, b, pred.data(), n);
    const float loss = mse_loss_cpu(pred.data(), data.y.data(), n);
    r.losses.push_back(loss);
    if (is_divergent(loss, r.losses.front())) {
      r.diverged_at = epoch;
      break;
    }
    if (print && epoch % config.print_every == 0) print(epoch, loss);
    float grad_w = 0.0f, grad_b = 0.0f;
    mse_backward_cpu(pred.data(), data.y.data(), data.x.data(), n, &grad_w, &grad_b);
    sgd_step_cpu(&w, grad_w, lr);
    sgd_step_cpu(&b, grad_b, lr);
  }
  r.training_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (r.diverged_at) return r;
  r.test_mse = test_mse_cpu(data, w, b);
  r.w = w;
  r.b = b;
  return r;
}

// ---------------------------------------------------------------------------------------------
// The kernels, in the order autograd launches them, each followed by its launcher.
namespace {

constexpr int kThreads = 256;              // threads per block in every kernel here
constexpr int kItemsPerThread = 8;         // first reduction pass: about this many terms per thread
constexpr int kMaxReductionBlocks = 1024;  // one wave on an H100/H200 (132 SMs x 8 blocks)
constexpr int kMaxElementwiseBlocks = 8192;


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

// Second pass of every reduction, one block: out[k] = scale * (sum of partials[k * blocks ..
// k * blocks + blocks)), each thread taking a fixed strided set of partials, then the block tree.
__global__ void finish_sums_kernel(const float* partials, int blocks, int sums, float scale, float* out) {
  for (int k = 0; k < sums; ++k) {
    float sum = 0.0f;
    for (int j = threadIdx.x; j < blocks; j += blockDim.x) sum += partials[k * blocks + j];
    sum = block_sum(sum);
    if (threadIdx.x == 0) out[k] = sum * scale;
  }
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

// nn.Linear(1, 1, device='cuda') and its fill_: the two parameters written where they live.
__global__ void set_params_kernel(float* params, float w, float b) {
  if (threadIdx.x == 0) {
    params[0] = w;
    params[1] = b;
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

void launch_set_params(float* params, float w, float b, cudaStream_t stream) {
  set_params_kernel<<<1, 32, 0, stream>>>(params, w, b);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// The GPU loop: the data made on the device once, then the four steps per epoch on one stream.
ByteCount gpu_bytes_needed(std::int64_t points, int epochs) {
  ByteCount need;
  need.add(points, sizeof(float), 3);            // x, y, the predictions
  need.add(noise_count(points), sizeof(float));  // the noise, while the data is made
  need.add(2 * kMaxReductionBlocks + 2 + 2 + 1, sizeof(float));  // partials, params, grads, test MSE
  need.add(epochs, sizeof(float));               // losses
  return need;
}

void require_gpu_memory(std::int64_t points, int epochs) {
  workbook::require_gpu_memory("--points " + std::to_string(points), gpu_bytes_needed(points, epochs));
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

Dataset GpuRegression::copy_dataset() const { return copy_dataset_to_host(x_.data(), y_.data(), config_.points); }

TrainingResult GpuRegression::train(const LossPrinter& print) {
  NvtxRange range("train");
  const std::int64_t n = split_.train;
  const float lr = static_cast<float>(config_.lr);
  host_scalars_.data()[0] = kInitialW;
  host_scalars_.data()[1] = kInitialB;
  CUDA_CHECK(cudaMemcpyAsync(params_.data(), host_scalars_.data(), 2 * sizeof(float), cudaMemcpyHostToDevice, stream_));
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled), losses_copied;

  TrainingResult r;
  int on_host = 0;  // losses [0, on_host) have been copied to host_losses_ and checked
  // Reads the losses copied so far and stops at the first divergent one.
  auto scan = [&](int up_to) {
    for (; on_host < up_to && !r.diverged_at; ++on_host) {
      r.losses.push_back(host_losses_.data()[on_host]);
      if (is_divergent(r.losses.back(), r.losses.front())) r.diverged_at = on_host;
    }
  };

  start.record(stream_);
  int epoch = 0;
  for (; epoch < config_.epochs; ++epoch) {
    launch_forward(x_.data(), params_.data(), pred_.data(), n, stream_);
    launch_mse_loss(pred_.data(), y_.data(), n, partials_.data(), losses_.data() + epoch, stream_);
    const bool print_now = epoch % config_.print_every == 0;
    if (print_now) {  // queued before the backward pass, so the GPU keeps working while the host reads
      CUDA_CHECK(cudaMemcpyAsync(host_losses_.data() + on_host, losses_.data() + on_host,
                                 (epoch + 1 - on_host) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
      losses_copied.record(stream_);
    }
    launch_mse_backward(pred_.data(), y_.data(), x_.data(), n, partials_.data(), grads_.data(), stream_);
    launch_sgd_step(params_.data(), grads_.data(), lr, stream_);
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

  CUDA_CHECK(cudaMemcpyAsync(host_losses_.data() + on_host, losses_.data() + on_host,
                             (epoch - on_host) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  // The test loss, outside the timed loop: forward and loss on the last 20% of the points.
  launch_forward(x_.data() + n, params_.data(), pred_.data() + n, split_.test, stream_);
  launch_mse_loss(pred_.data() + n, y_.data() + n, split_.test, partials_.data(), test_mse_.data(), stream_);
  CUDA_CHECK(cudaMemcpyAsync(host_scalars_.data(), params_.data(), 2 * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaMemcpyAsync(host_scalars_.data() + 2, test_mse_.data(), sizeof(float), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  scan(epoch);
  if (r.diverged_at) return r;
  r.w = host_scalars_.data()[0];
  r.b = host_scalars_.data()[1];
  r.test_mse = host_scalars_.data()[2];
  return r;
}

// ---------------------------------------------------------------------------------------------
// The flags the lesson and linear_regression_bench share.
void add_run_options(CLI::App& app, RunOptions& o) {
  add_common_options(app, o.common, DeviceFlag::kNone);
  add_device_choice(app, o.device, CpuDevice::kAllowed, "cpu, N, cuda or cuda:N (as torch.device; default cuda:0)");
  add_problem_options(app, o.config);
  app.add_flag("--shuffle", o.shuffle, "part 2: visit the mini-batches in a new order every epoch (seeded by --seed)");
  app.add_option("--fill-threads", o.fill_threads, "part 2: host threads filling pipeline 3's pinned ring (1 to 64)")
      ->type_name("T");
}

void check_run_options(const CLI::App& app, RunOptions& o, const std::string& batch_flag) {
  if (o.common.quick && app.count("--points") == 0) o.config.points = 20'011;  // odd, not a block multiple
  if (o.common.quick && app.count("--epochs") == 0) o.config.epochs = 60;
  validate(o.config);
  refuse_idle_seed(app, o.config, o.shuffle, /*has_shuffle=*/true);
  require_at_least("--fill-threads", o.fill_threads, 1);
  require_at_most("--fill-threads", o.fill_threads, 64);  // host threads filling one ring: more only contend
  if (app.count(batch_flag) == 0 && (o.shuffle || app.count("--fill-threads") > 0)) {
    throw UsageError("--shuffle and --fill-threads need " + batch_flag);
  }
  // Flags that would change nothing are refused, not ignored.
  if (o.device.cpu && app.count("--fill-threads") > 0) {
    throw UsageError("--fill-threads fills the GPU pipelines' pinned ring: it does nothing with --device cpu");
  }
  const CLI::Option* print_every = app.get_option_no_throw("--print-every");  // the bench has none
  if (app.count(batch_flag) > 0 && print_every != nullptr && print_every->count() > 0) {
    throw UsageError("--print-every shows the full-batch loop's losses: a run with " + batch_flag + " prints none");
  }
}

}  // namespace workbook::linear_regression

// ---------------------------------------------------------------------------------------------
// The program: the data, the float64 reference, the reported run checked against it, then the
// timed runs, then one table. (linear_regression_bench and the tests link this file too, its
// main() renamed: cmake/WorkbookChapter.cmake.)
#include "format.h"
#include "gpu_probe.h"
#include "minibatch.h"
#include "program.h"
#include "report.h"
#include "stats.h"
#include "table.h"

#include <cmath>
#include <optional>

namespace workbook::linear_regression {
namespace {

struct Options {
  RunOptions run;
  bool minibatch = false;              // --batch-size given: part 2
  BatchPlan plan{0, false, 42};        // batch size 0: full-batch, the article's loop
};

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 04: the article's PyTorch linear-regression loop, one CUDA kernel per step"};
  add_run_options(app, o.run);
  add_size_option(app, "--batch-size", o.plan.batch_size, "mini-batches of B points from host memory (part 2)");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  check_run_options(app, o.run, "--batch-size");
  o.minibatch = app.count("--batch-size") > 0;
  o.plan.shuffle = o.run.shuffle;
  o.plan.seed = o.run.config.seed;
  if (o.minibatch) validate(o.plan, split_of(o.run.config.points).train, o.run.config.epochs);
  return std::nullopt;
}

// The GPU's name, once `index` is known to exist and to hold the run: "no GPU" (77), a bad index
// (2) or too little memory (1) is then the program's only line.
std::string open_gpu(int index, const Config& config) {
  use_device(index);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  require_gpu_memory(config.points, config.epochs);
  return prop.name;
}

// The run's first lines, and its settings as the JSON's top-level values.
void describe_run(Report& report, const Options& o, const std::string& device_name) {
  const Config& c = o.run.config;
  const bool on_host = o.run.device.cpu || o.minibatch;  // where the data is made
  const Split split = split_of(c.points);
  report.out() << format("linear_regression: y = w*X + b by %s SGD, %lld points (%lld train, %lld test), %d epochs, "
                         "lr %g, noise %g (seed %llu)\n",
                         o.minibatch ? "mini-batch" : "full-batch", static_cast<long long>(c.points),
                         static_cast<long long>(split.train), static_cast<long long>(split.test), c.epochs, c.lr,
                         c.noise, static_cast<unsigned long long>(c.seed))
               << format("device: %s (%s); data made on the %s: X = i * 2e-6, y = 0.7 X + 0.3%s\n",
                         o.run.device.name().c_str(), o.run.device.cpu ? "one core" : device_name.c_str(),
                         on_host ? "host" : "GPU", c.noise > 0 ? " + noise" : "");
  nlohmann::json& j = report.json();
  j["device"] = device_name;
  j["torch_device"] = o.run.device.name();  // as the --device flag and torch.device name it
  j["implementation"] = o.run.device.cpu ? "cpu" : "cuda";
  j["quick"] = o.run.common.quick;
  j.update(settings_json(c));
  if (o.minibatch) {
    j["batch_size"] = o.plan.batch_size;
    j["shuffle"] = o.plan.shuffle;
    j["fill_threads"] = o.run.fill_threads;
  }
}

// One of the two implementations, on the data it trains on: the GPU's own (made there) or the host's.
struct Trainer {
  const Config& config;
  GpuRegression* gpu;  // null: the CPU twins
  const Dataset& data;
  TrainingResult train(const LossPrinter& print = {}) const {
    return gpu != nullptr ? gpu->train(print) : train_cpu(data, config, print);
  }
};

// Warm-up, then timed runs of the whole loop (loss reads included, as in the PyTorch loop). The
// GPU's reductions are deterministic: every repeat must give the bits of the reported run.
Stats time_training(const Trainer& trainer, const TrainingResult& reported, bool quick, Report& report) {
  NvtxRange range("timed runs");
  const bool gpu = trainer.gpu != nullptr;
  const int warmup = gpu ? 2 : 1;
  const int timed = quick ? 2 : gpu ? 10 : 3;
  std::vector<double> ms;
  for (int i = 0; i < warmup + timed; ++i) {
    const TrainingResult t = trainer.train();
    if (i >= warmup) ms.push_back(t.training_ms);
    if (gpu) report.check(t.w == reported.w && t.b == reported.b, "a repeated GPU run gave different bits for w, b");
  }
  return summarize(ms);
}

// Step 3: the run against the reference, into the result row; false when there is nothing to time.
bool check_run(const TrainingResult& got, const TrainingResult& want, Table::Row& row, Report& report) {
  std::ostream& out = report.out();
  if (got.diverged_at) {
    const int k = *got.diverged_at;
    // At epoch 0 no step has been taken: the data themselves overflow float32 (a huge --noise).
    const char* hint = k == 0 ? "the data overflow float32: try a smaller --noise" : "try a smaller --lr";
    out << format("diverged at epoch %d: the loss %s; no results to report (%s)\n", k,
                  std::isfinite(got.losses.at(k)) ? "grew past 1e10 times its first value" : "is no longer finite", hint);
    row.set("diverged_at", k);
    report.check(false, "diverged at epoch " + std::to_string(k));
    return false;
  }
  if (want.diverged_at) {
    report.check(false, "the float64 reference diverged at epoch " + std::to_string(*want.diverged_at) +
                            " but the float32 run did not");
    return false;
  }
  const Check c = check_against(got, want);
  row.set("w", got.w).set("b", got.b).set("test_mse", got.test_mse).set("w_error", c.w).set("b_error", c.b);
  row.set("loss_error", c.losses).set("test_error", c.test_mse).set("check", c.ok ? "ok" : "FAILED");
  out << format("checked against the reference: w, b to %g, every epoch's loss and the test MSE to %g (relative)\n",
                kParameterTolerance.rel, kLossTolerance.rel);
  report.check(c.ok, c.failure);
  return c.ok;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  const Config& config = o.run.config;
  const DeviceChoice& device = o.run.device;
  const std::string device_name = device.cpu ? "CPU" : open_gpu(device.index, config);
  if (device.cpu || o.minibatch) require_host_dataset(config);  // the training set is made on the host
  Report report("linear_regression", o.run.common.json);
  std::ostream& out = report.out();
  describe_run(report, o, device_name);

  // Part 2: the training set in host memory, mini-batches brought to the GPU (minibatch.cu).
  if (o.minibatch) {
    minibatch_story(report, make_dataset_cpu(config), config, o.plan, device.cpu, o.run.fill_threads, o.run.common.quick);
    return report.finish();
  }

  // 1. The data (on the GPU for cuda, the reference reads it back) and the float64 reference.
  out << "== 1. the data and the float64 reference\n";
  std::optional<Stream> stream;  // none for the CPU version: it must run without a driver
  std::optional<GpuRegression> gpu;
  Dataset data;
  if (device.cpu) {
    data = make_dataset_cpu(config);
  } else {
    stream.emplace();
    gpu.emplace(config, stream->get());
    data = gpu->copy_dataset();
  }
  const Trainer trainer{config, gpu ? &*gpu : nullptr, data};
  const TrainingResult want = train_reference(data, config);
  if (!want.diverged_at) {
    out << format("reference (float64 recurrence on the same float32 data): w %.9g, b %.9g\n", want.w, want.b);
  }

  // 2. The reported run, its losses shown as training goes, as the article's loop prints them.
  out << format("== 2. training on %s (%s)\n", device.name().c_str(),
                device.cpu ? "float32, one function per step" : "float32; forward, loss, backward, step kernels");
  Table losses({{"epoch", ""}, {"loss", ""}});
  const TrainingResult got = trainer.train([&](int epoch, double loss) {
    out << format("  epoch %4d  loss %.7g\n", epoch, loss);
    losses.add_row().set("epoch", epoch).set("loss", loss);
  });
  report.json()["losses"] = losses.json();

  // 3. The check: w, b and the test MSE, and the loss of every epoch, against the reference.
  out << "== 3. the check against the reference\n";
  Table result({{"diverged_at", ""}, {"w", "w", 9}, {"b", "b", 9}, {"test_mse", "test MSE", 10},
                {"w_error", "w err", 1, Column::Style::kScientific}, {"b_error", "b err", 1, Column::Style::kScientific},
                {"loss_error", "loss err", 1, Column::Style::kScientific},
                {"test_error", "test err", 1, Column::Style::kScientific}, {"check", "check"},
                {"training_ms", "ms", 3, Column::Style::kTiming}});
  Table::Row& row = result.add_row();
  const bool checked = check_run(got, want, row, report);

  // 4. Time, only a run that passed: the whole epoch loop, warmed up, repeated.
  if (checked && report.passed()) {
    const Stats t = time_training(trainer, got, o.run.common.quick, report);
    row.set("training_ms", timing(t));
    out << format("== 4. training time of %d epochs (%s, %s):\n", config.epochs,
                  median_of(static_cast<int>(t.count), "run", "runs").c_str(),
                  device.cpu ? "host clock" : "CUDA events; w and b bit-identical in every run");
  }
  if (row.cells().contains("w")) result.print(out);  // a diverged run has nothing to show
  report.json()["result"] = result.json();
  return report.finish();
}

}  // namespace
}  // namespace workbook::linear_regression

int main(int argc, char** argv) {
  return workbook::guarded_main("linear_regression", [&] { return workbook::linear_regression::run(argc, argv); });
}

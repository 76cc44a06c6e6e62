// fused_kernels.cu: chapter 05's lesson. Chapter 04 trained y = w*X + b with one kernel per
// PyTorch step: six launches per epoch, three of them kernels over the whole training set (seven
// full-array reads or writes). Here the same recurrence is trained eight ways, each a step
// further: fuse the passes into one, reduce without atomics, let the last block finish the epoch,
// capture the epochs in a CUDA graph, split over streams as the article does, run every epoch in
// one launch on a thread-block cluster, and finally run every epoch in one launch on every SM with
// the training set held on chip (persistent_kernels.cu).
// Read it beside "Phase 3: Performance Comparison for PyTorch and CUDA" (the custom kernels).
//
//   fused_kernels                    # 5M points, 200 epochs: check every variant, then time it
//   fused_kernels --variant 4,7,8 --points 50M
//   fused_kernels_bench ...          # sweeps, per-kernel breakdown, traces (bench_fused.cpp)
//
// Every variant computes, per epoch, the three sums the MSE step needs over the training points:
// sum r^2 (the loss), sum r x and sum r (the gradients), r = w x + b - y, then applies
//   loss = sum r^2 / n,  w <- w - lr * (2/n) sum r x,  b <- b - lr * (2/n) sum r
// with the float operations of chapter 04. How a thread and a block add their points is in
// common/fused_sums.cuh (shared with chapter 06); the float64 reference every variant is checked
// against is train_reference in common/regression_problem.h.
#include "fused_kernels.h"

#include "cli.h"
#include "copy_ceiling.h"
#include "cuda_check.h"
#include "event_timer.h"
#include "format.h"
#include "fused_sums.cuh"
#include "gpu_probe.h"
#include "gpu_memory.h"
#include "nvtx.h"
#include "program.h"
#include "regression_cli.h"
#include "regression_data.h"
#include "report.h"
#include "table.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

namespace workbook::fused {
namespace {


constexpr int kUnfusedItemsPerThread = 8;  // variant 1 (as 04): about 8 terms per thread, at most
constexpr int kMaxUnfusedBlocks = 1024;    // one wave on an H100/H200 (132 SMs x 8 blocks)
constexpr int kAtomicSlots = 32;           // variant 2: totals spread over 32 slots (see atomic_sums_kernel)
constexpr int kSlotStride = 32;            // one 128-byte line per slot

// What the step needs besides the sums. inv_n and two_inv_n are 04's float(1.0 / n), float(2.0 / n).
struct StepArgs {
  float* params;  // {w, b}
  float* losses;  // one per epoch
  int epoch;
  float lr;
  float inv_n;
  float two_inv_n;
};

// The loss of this epoch and the SGD step, by one thread, in 04's float operations.
__device__ __forceinline__ void apply_step(const Sums& total, const StepArgs& a) {
  a.losses[a.epoch] = total.rr * a.inv_n;
  a.params[0] -= a.lr * (total.rx * a.two_inv_n);
  a.params[1] -= a.lr * (total.r * a.two_inv_n);
}

// ---------------------------------------------------------------------------------------------
// Variant 1: chapter 04's kernels, restated (04's README walks through them): forward writes the
// predictions; the loss and the backward pass each read them back, as per-block partial sums and
// then one block that adds the partials in order; the step is one more launch.

__global__ void forward_kernel(const float* x, const float* params, float* pred, std::int64_t n) {
  const float w = params[0], b = params[1];
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    pred[i] = fmaf(w, x[i], b);
  }
}

// The loss pass (sum r^2 into row 0) or the backward pass (sum r x, sum r into rows 1 and 2).
template <bool kGradients>
__global__ void residual_partials_kernel(const float* pred, const float* y, const float* x, std::int64_t n,
                                         float* partials, int stride) {
  Sums s{0.0f, 0.0f, 0.0f};
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const float r = pred[i] - y[i];
    if constexpr (kGradients) {
      s.rx += r * x[i];
      s.r += r;
    } else {
      s.rr += r * r;
    }
  }
  s = block_sums<kThreads>(s);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s.rr;
    partials[stride + blockIdx.x] = s.rx;
    partials[2 * stride + blockIdx.x] = s.r;
  }
}

// One block adds the partials in order: out[0] = scale * sum r^2, or out = scale * {sum r x, sum r}.
template <bool kGradients>
__global__ void finish_kernel(const float* partials, int count, float scale, float* out) {
  const Sums total = reduce_partials(partials, count, count);
  if (threadIdx.x != 0) return;
  if constexpr (kGradients) {
    out[0] = total.rx * scale;
    out[1] = total.r * scale;
  } else {
    out[0] = total.rr * scale;
  }
}

__global__ void sgd_step_kernel(float* params, const float* grads, float lr) {
  if (threadIdx.x < 2) params[threadIdx.x] -= lr * grads[threadIdx.x];
}

// ---------------------------------------------------------------------------------------------
// Variant 2: fusion without a reduction. Every point adds its three terms straight into global
// totals with float atomicAdd: 3 atomics per point, all aimed at a few addresses, which the L2
// must apply one after another. Spreading them over 32 slots (by block) keeps each slot's chain
// of float additions 32 times shorter; still, 125K additions a slot at 5M points round the losses
// by about 1e-4 (so this variant's losses are checked to 1e-3), and the order is whatever order
// the atomics arrive in, so the last bits change from run to run.
__global__ void atomic_sums_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n,
                                   const float* params, float* slots) {
  const float w = params[0], b = params[1];
  float* slot = slots + (blockIdx.x % kAtomicSlots) * kSlotStride;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float r = fmaf(w, x[i], b) - y[i];
    atomicAdd(slot + 0, r * r);
    atomicAdd(slot + 1, r * x[i]);
    atomicAdd(slot + 2, r);
  }
}

// Adds the 32 slots in order, steps, and zeroes the slots for the next epoch (no memset launch).
__global__ void atomic_update_kernel(float* slots, StepArgs step) {
  if (threadIdx.x == 0) {
    Sums total{0.0f, 0.0f, 0.0f};
    for (int k = 0; k < kAtomicSlots; ++k) {
      total.rr += slots[k * kSlotStride + 0];
      total.rx += slots[k * kSlotStride + 1];
      total.r += slots[k * kSlotStride + 2];
    }
    apply_step(total, step);
  }
  __syncthreads();  // every slot is read before any is zeroed
  for (int k = threadIdx.x; k < kAtomicSlots; k += blockDim.x) {
    for (int j = 0; j < 3; ++j) slots[k * kSlotStride + j] = 0.0f;
  }
}

// ---------------------------------------------------------------------------------------------
// Variants 3-6: forward, loss and both gradients in one pass over X and y. Each block writes its
// three sums to partials[column + block] in three rows `stride` apart.
//
// With kLastBlockSteps (variants 4 and 5) the kernel also finishes the epoch: each block, after
// writing its partials, fences (so they are visible to the whole GPU before it is counted) and
// increments done_count; the block that sees count == gridDim.x - 1 is the last, and only it
// adds all partials (in block order, whichever block is last) and applies the step. It then
// resets done_count for the next launch. Every block read w and b before it was counted, so the
// last block may overwrite them.
template <bool kLastBlockSteps>
__global__ void __launch_bounds__(kThreads)
    fused_sums_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n, float* params,
                      float* partials, int stride, unsigned* done_count, StepArgs step) {
  const float w = params[0], b = params[1];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Sums s = block_sums<kThreads>(thread_sums(x, y, n, w, b, t, static_cast<std::int64_t>(gridDim.x) * blockDim.x));
  write_partials(s, partials, stride);
  if constexpr (kLastBlockSteps) {
    if (counted_last(done_count)) {  // common/fused_sums.cuh: fenced, counted, the last block alone
      const Sums total = reduce_partials(partials, gridDim.x, stride);
      if (threadIdx.x == 0) {
        apply_step(total, step);
        *done_count = 0;  // ready for the next epoch's launch
      }
    }
  }
}

// Variants 3 and 6: the second kernel, one block: adds `count` partials in order and steps.
__global__ void __launch_bounds__(kThreads) update_kernel(const float* partials, int count, int stride, StepArgs step) {
  const Sums total = reduce_partials(partials, count, stride);
  if (threadIdx.x == 0) apply_step(total, step);
}

int unfused_blocks(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>(ceil_div(n, kThreads * kUnfusedItemsPerThread), 1, kMaxUnfusedBlocks));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The launchers: one GPU's training state, and each variant's epoch.

FusedTraining::FusedTraining(const Config& config, cudaStream_t stream)
    : config_(config),
      train_points_(regression::split_of(config.points).train),
      test_points_(regression::split_of(config.points).test),
      stream_(stream) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device));
  capability_ = device_compute_capability(device);  // tests may lower it: see compute_capability.h
  probe_clusters();  // variant 7: persistent_kernels.cu
  probe_on_chip();   // variant 8: persistent_kernels.cu
  NvtxRange range("make data");
  require_gpu_memory("--points " + std::to_string(config.points), bytes_needed(config));
  x_ = DeviceBuffer<float>(config.points);
  y_ = DeviceBuffer<float>(config.points);
  pred_ = DeviceBuffer<float>(config.points);
  partials_ = DeviceBuffer<float>(3 * static_cast<std::size_t>(std::max(kMaxUnfusedBlocks, multiprocessors_ * kBlocksPerSm)));
  grads_ = DeviceBuffer<float>(2);
  atomic_slots_ = DeviceBuffer<float>(kAtomicSlots * kSlotStride);
  params_ = DeviceBuffer<float>(2);
  losses_ = DeviceBuffer<float>(config.epochs);
  test_mse_ = DeviceBuffer<float>(1);
  done_count_ = DeviceBuffer<unsigned>(1);
  on_chip_partials_ = DeviceBuffer<float>(2 * 3 * static_cast<std::size_t>(std::max(1, on_chip_.capacity.blocks)));
  CUDA_CHECK(cudaMemsetAsync(done_count_.data(), 0, done_count_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(partials_.data(), 0, partials_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(atomic_slots_.data(), 0, atomic_slots_.bytes(), stream_));
  const DeviceBuffer<float> noise = regression::make_noise_on_gpu(config, stream_);
  regression::launch_make_data(x_.data(), y_.data(), noise.data(), config.noise, 0, config.points, stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // before the noise is freed
}

// What the constructor allocates: x, y, predictions, the noise while the data is made, partials.
ByteCount FusedTraining::bytes_needed(const Config& config) {
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  ByteCount need;
  need.add(config.points, sizeof(float), 3);
  if (config.noise > 0.0) need.add(regression::noise_count(config.points), sizeof(float));
  need.add(3 * std::max(kMaxUnfusedBlocks, multiprocessors * kBlocksPerSm) + kAtomicSlots * kSlotStride + 5,
           sizeof(float));
  need.add(2 * 3 * multiprocessors * (2048 / kOnChipThreads), sizeof(float));  // variant 8's partials, at most
  return need.add(config.epochs, sizeof(float));
}

FusedTraining::~FusedTraining() {
  if (graph_exec_ != nullptr) (void)cudaGraphExecDestroy(graph_exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
}

void FusedTraining::reset_params() {
  regression::launch_reset_params(params_.data(), stream_);
}

void FusedTraining::unfused_forward() {
  const std::int64_t n = train_points_;
  forward_kernel<<<unfused_blocks(n), kThreads, 0, stream_>>>(x_.data(), params_.data(), pred_.data(), n);
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::unfused_loss(int epoch) {
  const std::int64_t n = train_points_;
  const int blocks = unfused_blocks(n);
  residual_partials_kernel<false><<<blocks, kThreads, 0, stream_>>>(pred_.data(), y_.data(), x_.data(), n,
                                                                     partials_.data(), blocks);
  CUDA_CHECK_LAUNCH();
  finish_kernel<false><<<1, kThreads, 0, stream_>>>(partials_.data(), blocks, static_cast<float>(1.0 / n),
                                                    losses_.data() + epoch);
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::unfused_backward() {
  const std::int64_t n = train_points_;
  const int blocks = unfused_blocks(n);
  residual_partials_kernel<true><<<blocks, kThreads, 0, stream_>>>(pred_.data(), y_.data(), x_.data(), n,
                                                                    partials_.data(), blocks);
  CUDA_CHECK_LAUNCH();
  finish_kernel<true><<<1, kThreads, 0, stream_>>>(partials_.data(), blocks, static_cast<float>(2.0 / n),
                                                   grads_.data());
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::unfused_step() {
  sgd_step_kernel<<<1, 32, 0, stream_>>>(params_.data(), grads_.data(), static_cast<float>(config_.lr));
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::atomic_epoch(int epoch) {
  const std::int64_t n = train_points_;
  atomic_sums_kernel<<<fused_blocks(n, multiprocessors_), kThreads, 0, stream_>>>(x_.data(), y_.data(), n,
                                                                                   params_.data(), atomic_slots_.data());
  CUDA_CHECK_LAUNCH();
  const StepArgs step{params_.data(), losses_.data(), epoch, static_cast<float>(config_.lr),
                      static_cast<float>(1.0 / n), static_cast<float>(2.0 / n)};
  atomic_update_kernel<<<1, 32, 0, stream_>>>(atomic_slots_.data(), step);
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::block_partials(Segment points, int blocks, int column, int stride, cudaStream_t stream) {
  fused_sums_kernel<false><<<blocks, kThreads, 0, stream>>>(x_.data() + points.first, y_.data() + points.first,
                                                           points.count, params_.data(), partials_.data() + column,
                                                           stride, nullptr, StepArgs{});
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::update(int epoch, int partial_count, int stride) {
  const std::int64_t n = train_points_;
  const StepArgs step{params_.data(), losses_.data(), epoch, static_cast<float>(config_.lr),
                      static_cast<float>(1.0 / n), static_cast<float>(2.0 / n)};
  update_kernel<<<1, kThreads, 0, stream_>>>(partials_.data(), partial_count, stride, step);
  CUDA_CHECK_LAUNCH();
}

void launch_last_block_epoch(const float* x, const float* y, std::int64_t n, float* params, float* losses, int epoch,
                             float lr, int blocks, float* partials, unsigned* done_count, cudaStream_t stream) {
  const StepArgs step{params, losses, epoch, lr, static_cast<float>(1.0 / n), static_cast<float>(2.0 / n)};
  fused_sums_kernel<true><<<blocks, kThreads, 0, stream>>>(x, y, n, params, partials, blocks, done_count, step);
  CUDA_CHECK_LAUNCH();
}

void FusedTraining::last_block_epoch(int epoch) {
  launch_last_block_epoch(x_.data(), y_.data(), train_points_, params_.data(), losses_.data(), epoch,
                          static_cast<float>(config_.lr), shape(Variant::kLastBlock).blocks, partials_.data(),
                          done_count_.data(), stream_);
}

// Fork: every side stream waits for this epoch's w and b. Join: the update waits for all four.
void FusedTraining::streams_epoch(int epoch) {
  const int blocks = shape(Variant::kStreams).blocks;
  const int stride = blocks * kStreamCount;
  params_ready_.record(stream_);
  for (int k = 0; k < kStreamCount; ++k) {
    cudaStream_t side = side_stream(k);
    CUDA_CHECK(cudaStreamWaitEvent(side, params_ready_.get(), 0));
    block_partials(segment(k), blocks, k * blocks, stride, side);
    side_done_[k].record(side);
    CUDA_CHECK(cudaStreamWaitEvent(stream_, side_done_[k].get(), 0));
  }
  update(epoch, stride, stride);
}

TrainingResult FusedTraining::train(Variant v) {
  NvtxRange range(variant_name(v));
  if (!supports(v)) throw std::runtime_error(std::string("variant ") + variant_name(v) + ": " + skip_reason(v));
  if (v == Variant::kGraph && graph_exec_ == nullptr) capture_graph();
  reset_params();  // outside the timed region, as is everything but the epoch loop
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  start.record(stream_);
  if (v == Variant::kGraph) {
    CUDA_CHECK(cudaGraphLaunch(graph_exec_, stream_));
  } else if (v == Variant::kPersistent) {
    persistent_all_epochs();
  } else if (v == Variant::kOnChip) {
    on_chip_all_epochs();
  } else {
    for (int e = 0; e < config_.epochs; ++e) epoch(v, e);
  }
  stop.record(stream_);
  stop.synchronize();

  TrainingResult r;
  r.training_ms = elapsed_ms(start, stop);
  // The test loss with variant 1's kernels, on the last 20% of the points, outside the timed loop.
  const std::int64_t n = train_points_;
  const int blocks = unfused_blocks(test_points_);
  forward_kernel<<<blocks, kThreads, 0, stream_>>>(x_.data() + n, params_.data(), pred_.data() + n, test_points_);
  CUDA_CHECK_LAUNCH();
  residual_partials_kernel<false><<<blocks, kThreads, 0, stream_>>>(pred_.data() + n, y_.data() + n, nullptr,
                                                                     test_points_, partials_.data(), blocks);
  CUDA_CHECK_LAUNCH();
  finish_kernel<false><<<1, kThreads, 0, stream_>>>(partials_.data(), blocks, static_cast<float>(1.0 / test_points_),
                                                    test_mse_.data());
  CUDA_CHECK_LAUNCH();
  std::vector<float> losses(config_.epochs);
  float params[2] = {0.0f, 0.0f}, test_mse = 0.0f;
  CUDA_CHECK(cudaMemcpyAsync(losses.data(), losses_.data(), losses_.bytes(), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaMemcpyAsync(params, params_.data(), sizeof params, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaMemcpyAsync(&test_mse, test_mse_.data(), sizeof test_mse, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  r.losses.assign(losses.begin(), losses.end());
  r.diverged_at = regression::first_divergent(r.losses);  // the loop ran on: no host checks inside it
  if (r.diverged_at) r.losses.resize(static_cast<std::size_t>(*r.diverged_at) + 1);
  r.w = params[0];
  r.b = params[1];
  r.test_mse = test_mse;
  return r;
}

LaunchShape FusedTraining::shape(Variant v) const {
  const int blocks = fused_blocks(train_points_, multiprocessors_);
  switch (v) {
    case Variant::kUnfused: return {unfused_blocks(train_points_), kThreads};
    case Variant::kAtomic: return {blocks, kThreads};
    case Variant::kBlockReduce: return {blocks, kThreads};
    case Variant::kLastBlock: return {blocks, kThreads};
    case Variant::kGraph: return {blocks, kThreads};
    case Variant::kStreams:  // each stream's grid: a quarter of the GPU at most
      return {std::max(1, std::min(fused_blocks(segment(0).count, multiprocessors_),
                                   multiprocessors_ * kBlocksPerSm / kStreamCount)),
              kThreads};
    case Variant::kPersistent: return {cluster_blocks(), kClusterThreads};
    case Variant::kOnChip: return {on_chip_.capacity.blocks, kOnChipThreads};
  }
  return {};
}

}  // namespace workbook::fused

// ---------------------------------------------------------------------------------------------
// The program: check every variant against the float64 reference, then time each, then one table.
// (fused_kernels_bench and the tests link this file too, its main() renamed: cmake/WorkbookChapter.cmake.)
namespace workbook::fused {
namespace {

// Variant 2's losses are sums of float atomicAdds in arrival order: each of its 32 slots adds
// 125K terms an epoch at 5M points, one after another, so their rounding reaches about 1e-4 of
// the loss (measured up to 1.2e-4 on an H200) where the tree reductions stay near 1e-6. That
// loss of accuracy is part of the lesson, so the variant gets a looser bound, printed beside it;
// its w and b, and every other variant, keep 04's tolerances.
constexpr Tolerance kAtomicLossTolerance{0.0, 1e-3};
constexpr int kAtomicMaxRepeats = 3;  // variant 2 takes up to a second per run at 5M points

bool same_bits(const TrainingResult& a, const TrainingResult& b) {
  return a.w == b.w && a.b == b.b && a.losses == b.losses && a.test_mse == b.test_mse;
}

// Warm-up, then timed runs; every repeat of a deterministic variant must give the same bits.
Stats time_variant(FusedTraining& gpu, Variant v, const TrainingResult& first, Repeats repeats, Report& report) {
  NvtxRange range("timed runs");
  if (v == Variant::kAtomic) repeats.timed = std::min(repeats.timed, kAtomicMaxRepeats);
  std::vector<double> ms;
  for (int i = 0; i < repeats.warmup + repeats.timed; ++i) {
    const TrainingResult t = gpu.train(v);
    if (i >= repeats.warmup) ms.push_back(t.training_ms);
    if (is_deterministic(v)) report.check(same_bits(t, first), "variant " + label(v) + ": a repeated run gave other bits");
  }
  return summarize(ms);
}

struct Options {
  CommonOptions common;
  LadderOptions ladder;
};

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 05: chapter 04's regression fused into one kernel per epoch, then one launch in all"};
  add_common_options(app, o.common);
  o.ladder.repeats = 10;
  add_ladder_options(app, o.ladder, "timed runs per variant (default 10, 2 with --quick; at most 3 for variant 2)");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  finish_ladder_options(app, o.common.quick, o.ladder);
  (void)pretended_compute_capability();  // a malformed test override is refused before anything is printed
  return std::nullopt;
}

// The run's first lines, and its settings as the JSON's top-level values.
void describe_run(const Options& o, Report& report) {
  const Config& c = o.ladder.config;
  const regression::Split split = regression::split_of(c.points);
  report.out() << format("fused_kernels: y = w*X + b by full-batch SGD, %lld points (%lld train, %lld test), %d epochs, "
                         "lr %g, noise %g\n",
                         static_cast<long long>(c.points), static_cast<long long>(split.train),
                         static_cast<long long>(split.test), c.epochs, c.lr, c.noise)
               << "device: " + describe_device(o.common.device) + "\n";
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, o.common.device));
  nlohmann::json& j = report.json();
  j["device"] = prop.name;
  j["quick"] = o.common.quick;
  j.update(regression::settings_json(c));
  j["repeats"] = o.ladder.repeats;
  j["copy_mib"] = o.ladder.copy_mib;
}

// Step 1 for one variant: its first run against the reference, into its row (a variant this GPU
// cannot run is skipped, with why). Returns the run, or nullopt for a skipped variant.
std::optional<TrainingResult> check_variant(FusedTraining& gpu, Variant v, const TrainingResult& want, Table::Row& row,
                                            Report& report) {
  row.set("variant", static_cast<int>(v)).set("name", variant_name(v));
  if (!gpu.supports(v)) {
    row.set("check", "skipped: " + gpu.skip_reason(v));
    return std::nullopt;
  }
  const LaunchShape s = gpu.shape(v);
  const TrainingResult got = gpu.train(v);
  const Tolerance losses = v == Variant::kAtomic ? kAtomicLossTolerance : regression::kLossTolerance;
  const regression::Check c = regression::check_against(got, want, regression::kParameterTolerance, losses);
  row.set("blocks", s.blocks).set("threads", s.threads).set("launches_per_epoch", gpu.kernels_per_epoch(v));
  row.set("w", got.w).set("b", got.b).set("test_mse", got.test_mse).set("passed", c.ok);
  if (!want.diverged_at) row.set("w_error", c.w).set("b_error", c.b).set("loss_error", c.losses).set("test_error", c.test_mse);
  row.set("check", c.ok ? "ok" : "FAILED");
  report.check(c.ok, "variant " + label(v) + ": " + c.failure);
  return got;
}

// Step 2 for one variant: its timed runs, and what they achieve beside the copy and variant 1.
void time_row(const Stats& t, const Config& config, double copy_gbps, double unfused_ms, Table::Row& row) {
  const double gbps = achieved_gbps(regression::split_of(config.points).train, config.epochs, t.median);
  row.set("training_ms", timing(t)).set("us_per_epoch", us_per_epoch(config.epochs, t.median)).set("gbps", gbps);
  row.set("copy_percent", 100.0 * gbps / copy_gbps);
  if (unfused_ms > 0) row.set("speedup", unfused_ms / t.median);
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  const Config& config = o.ladder.config;
  const std::vector<Variant>& variants = o.ladder.variants;
  const int copy_mib = o.ladder.copy_mib;
  use_device(o.common.device);
  const std::size_t copy_bytes = static_cast<std::size_t>(copy_mib) << 20;
  // The data and, while it is held, the two buffers of the ceiling's copy: asked before either is taken.
  require_gpu_memory("--points " + std::to_string(config.points) + " with --copy-mib " + std::to_string(copy_mib),
                     FusedTraining::bytes_needed(config).add(static_cast<std::int64_t>(copy_bytes), 1, 2));
  Report report("fused_kernels", o.common.json);
  std::ostream& out = report.out();
  describe_run(o, report);
  Stream stream;
  FusedTraining gpu(config, stream.get());
  out << "on chip (variant 8): " + gpu.on_chip_text() + "\n";

  // 1. The reference, then every variant's first run checked against it.
  out << "== 1. every variant's first run against the float64 reference\n";
  const TrainingResult want = regression::train_reference(gpu.copy_dataset(), config);
  if (!want.diverged_at) {
    out << format("reference (float64 recurrence on the same data): w %.9g, b %.9g, test MSE %.9g\n", want.w, want.b,
                  want.test_mse);
  }
  Table table({{"variant", "#"}, {"name", "variant"}, {"blocks", "blocks"}, {"threads", "threads"},
               {"launches_per_epoch", "launches/epoch"}, {"w", ""}, {"b", ""}, {"test_mse", ""},
               {"w_error", "w err", 1, Column::Style::kScientific}, {"b_error", "b err", 1, Column::Style::kScientific},
               {"loss_error", "loss err", 1, Column::Style::kScientific},
               {"test_error", "test err", 1, Column::Style::kScientific}, {"passed", ""},
               {"training_ms", "ms", 3, Column::Style::kTiming}, {"us_per_epoch", "us/epoch", 2},
               {"gbps", "GB/s", 0}, {"copy_percent", "% of copy", 1}, {"speedup", "vs 1", 1}, {"check", "check"}});
  std::vector<std::optional<TrainingResult>> first;
  for (const Variant v : variants) first.push_back(check_variant(gpu, v, want, table.add_row(), report));
  out << format("checked against the reference: w, b to %g, every epoch's loss to %g (variant 2, float atomics: %g)\n",
                regression::kParameterTolerance.rel, regression::kLossTolerance.rel, kAtomicLossTolerance.rel);
  const auto last_run = std::find_if(first.rbegin(), first.rend(), [](const auto& r) { return r.has_value(); });
  if (want.diverged_at) {
    out << format("diverged at epoch %d (the reference and every variant); nothing to time\n", *want.diverged_at);
    report.check(false, "diverged at epoch " + std::to_string(*want.diverged_at));
  } else if (last_run != first.rend()) {  // variants 7 and 8 may be skipped
    out << "losses (read after training: no host synchronization inside the loop):\n";
    for (int e : regression::printed_epochs(config.epochs, config.print_every)) {
      out << format("  epoch %4d  loss %.7g\n", e, (*last_run)->losses[e]);
    }
  }

  // 2. Time each variant that passed: the epoch loop alone, warm-up, median of repeats.
  if (report.passed()) {
    out << "== 2. the training time of every variant\n";
    const double copy_gbps = device_copy_gbps(copy_bytes, stream.get());
    out << format("ceiling: device-to-device copy of %d MiB: %.4g GB/s (bytes read + written)\n", copy_mib, copy_gbps);
    report.json()["copy_gbps"] = copy_gbps;
    double unfused_ms = 0.0;
    for (std::size_t i = 0; i < variants.size(); ++i) {
      if (!first[i]) continue;
      const Repeats repeats{o.common.quick ? 1 : 2, o.ladder.repeats};
      const Stats t = time_variant(gpu, variants[i], *first[i], repeats, report);
      if (variants[i] == Variant::kUnfused) unfused_ms = t.median;
      time_row(t, config, copy_gbps, unfused_ms, table.rows()[i]);
    }
    out << format("training time of %d epochs (%s, CUDA events around the epoch loop); bit-identical "
                  "reruns checked for all but variant 2:\n", config.epochs, median_of(o.ladder.repeats, "run", "runs").c_str());
  }

  // 3. One table: the check and the time of every variant.
  out << "== 3. every variant: its check and its time\n";
  table.print(out);
  report.json()["variants"] = table.json();
  return report.finish();
}

}  // namespace
}  // namespace workbook::fused

int main(int argc, char** argv) {
  return workbook::guarded_main("fused_kernels", [&] { return workbook::fused::run(argc, argv); });
}

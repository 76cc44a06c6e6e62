// fused_kernels.cu: the seven training variants of chapter 05 and their kernels.
//
// Every variant computes, per epoch, the three sums the MSE step needs over the training points:
// sum r^2 (the loss), sum r x and sum r (the two gradients), r = w x + b - y, then applies
//   loss = sum r^2 / n,  w <- w - lr * (2/n) sum r x,  b <- b - lr * (2/n) sum r
// exactly as chapter 04's kernels and the float64 reference in regression.h do. What changes
// from variant to variant is how many times X and y are read, how the sums are combined, and
// how many launches the host issues. Only variant 2 uses float atomics (its lesson); every other
// variant adds in an order fixed by n and the GPU's multiprocessor count, so reruns are bit-identical.
#include "fused_kernels.cuh"
#include "fused_sums.cuh"

#include "cuda_check.h"
#include "curand_generator.h"
#include "event_timer.h"
#include "linear_regression.cuh"
#include "nvtx.h"
#include "pipeline.h"  // chapter 03: TraceRecorder

#include <cooperative_groups.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace workbook::fused {
namespace {

namespace cg = cooperative_groups;
using regression::kInitialB;
using regression::kInitialW;

constexpr int kAtomicSlots = 32;       // variant 2: totals spread over 32 slots (see atomic_sums_kernel)
constexpr int kSlotStride = 32;        // one 128-byte line per slot
constexpr int kClusterThreads = 512;   // variant 7: threads per block of the cluster
constexpr int kMaxClusterBlocks = 16;  // Hopper's largest cluster (a non-portable size)

// ---------------------------------------------------------------------------------------------
// Device building blocks (the sums themselves: fused_sums.cuh, shared with chapter 06).

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
  const float grad_w = total.rx * a.two_inv_n;
  const float grad_b = total.r * a.two_inv_n;
  a.params[0] -= a.lr * grad_w;
  a.params[1] -= a.lr * grad_b;
}

// ---------------------------------------------------------------------------------------------
// Kernels.

__global__ void set_params_kernel(float* params) {
  params[0] = kInitialW;
  params[1] = kInitialB;
}

// Variant 2: fusion without a reduction. Every point adds its three terms straight into global
// totals with float atomicAdd: 3 atomics per point, all aimed at a few addresses, which the L2
// must apply one after another. Spreading them over 32 slots (by block) keeps each slot's chain
// of float additions 32 times shorter; still, 125K additions a slot at 5M points round the losses
// by about 1e-4 (main.cpp checks this variant's losses to 1e-3), and the order is whatever order
// the atomics arrive in, so the last bits change from run to run.
__global__ void atomic_sums_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n,
                                   const float* params, float* slots) {
  const float w = params[0];
  const float b = params[1];
  float* slot = slots + (blockIdx.x % kAtomicSlots) * kSlotStride;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float r = fmaf(w, x[i], b) - y[i];
    atomicAdd(slot + 0, r * r);
    atomicAdd(slot + 1, r * x[i]);
    atomicAdd(slot + 2, r);
  }
}

// Variant 2's second kernel: adds the 32 slots in order, steps, and zeroes the slots for the
// next epoch (no memset launch needed).
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
    slots[k * kSlotStride + 0] = 0.0f;
    slots[k * kSlotStride + 1] = 0.0f;
    slots[k * kSlotStride + 2] = 0.0f;
  }
}

// Variants 3-6: forward, loss and both gradients in one pass over X and y. Each block writes its
// three sums to partials[blockIdx], [stride + blockIdx], [2 stride + blockIdx].
//
// With kLastBlockSteps (variants 4 and 5) the kernel also finishes the epoch: each block, after
// writing its partials, fences (so they are visible to the whole GPU before it is counted) and
// increments done_count; the block that sees count == gridDim.x - 1 is the last, and only it
// reduces all partials (in block order, whichever block is last) and applies the step. It then
// resets done_count to 0 for the next launch. Every block read w and b before it was counted,
// so the last block may overwrite them.
template <bool kLastBlockSteps>
__global__ void __launch_bounds__(kThreads)
    fused_sums_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n, float* params,
                      float* partials, int stride, unsigned* done_count, StepArgs step) {
  const float w = params[0];
  const float b = params[1];
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Sums s = block_sums<kThreads>(thread_sums(x, y, n, w, b, t, static_cast<std::int64_t>(gridDim.x) * blockDim.x));
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = s.rr;
    partials[stride + blockIdx.x] = s.rx;
    partials[2 * stride + blockIdx.x] = s.r;
  }
  if constexpr (kLastBlockSteps) {
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
      __threadfence();  // release: this block's partials before its count
      is_last = atomicAdd(done_count, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (is_last) {
      __threadfence();  // acquire: every counted block's partials after the count
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

// Variant 7: every epoch in one launch, on one thread-block cluster (up to 16 blocks, one per
// SM of a GPC). When the training set fits (up to kCachedFloat4 float4s of x and of y per thread:
// 131K training points on 16 x 512 threads), each thread reads its points from memory once and
// keeps them in registers for every epoch; otherwise it reads them each epoch (from L2 or L1).
// Both paths add in thread_sums' order, so they give the same bits.
// Per epoch each block reduces its sums and leaves them in its own shared memory; one cluster
// barrier; then warp 0 of every block reads all blocks' sums through distributed shared memory
// and adds them with the same shuffle tree, so every block computes the same w and b with no
// second barrier. The sums are double-buffered by epoch parity: a block overwrites buffer e % 2
// only after the next barrier, which every reader of epoch e has passed.
__global__ void __launch_bounds__(kClusterThreads)
    persistent_cluster_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n,
                              float* params, float* losses, int epochs, float lr, float inv_n, float two_inv_n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the host never launches this on older GPUs (supports())
#else
  constexpr int kCachedFloat4 = 4;  // float4s of x and of y a thread keeps in registers
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ Sums exchange[2];
  __shared__ float new_wb[2];
  const unsigned rank = cluster.block_rank();
  const unsigned blocks = cluster.num_blocks();
  const std::int64_t t = static_cast<std::int64_t>(rank) * blockDim.x + threadIdx.x;
  const std::int64_t T = static_cast<std::int64_t>(blocks) * blockDim.x;
  const std::int64_t n4 = n / 4;
  const std::int64_t tail = 4 * n4 + t;
  const bool on_chip = n4 <= kCachedFloat4 * T;
  float4 x_reg[kCachedFloat4], y_reg[kCachedFloat4];
  float x_tail = 0.0f, y_tail = 0.0f;
  if (on_chip) {  // the only reads of X and y from memory in this whole launch
#pragma unroll
    for (int k = 0; k < kCachedFloat4; ++k) {
      const std::int64_t i = t + k * T;
      const bool inside = i < n4;
      x_reg[k] = inside ? reinterpret_cast<const float4*>(x)[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      y_reg[k] = inside ? reinterpret_cast<const float4*>(y)[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    if (tail < n) {
      x_tail = x[tail];
      y_tail = y[tail];
    }
  }
  float w = params[0];
  float b = params[1];
  for (int epoch = 0; epoch < epochs; ++epoch) {
    Sums s{0.0f, 0.0f, 0.0f};
    if (on_chip) {
#pragma unroll
      for (int k = 0; k < kCachedFloat4; ++k) {
        if (t + k * T < n4) accumulate4(x_reg[k], y_reg[k], w, b, s);
      }
      if (tail < n) accumulate(x_tail, y_tail, w, b, s);
    } else {
      s = thread_sums(x, y, n, w, b, t, T);
    }
    s = block_sums<kClusterThreads>(s);
    if (threadIdx.x == 0) exchange[epoch & 1] = s;
    cluster.sync();  // every block's sums are written (and visible across the cluster)
    if (threadIdx.x < 32) {
      Sums p{0.0f, 0.0f, 0.0f};
      if (threadIdx.x < blocks) p = *cluster.map_shared_rank(&exchange[epoch & 1], threadIdx.x);
      p = warp_sums(p);  // the same tree in every block: the same bits everywhere
      if (threadIdx.x == 0) {
        if (rank == 0) losses[epoch] = p.rr * inv_n;
        const float grad_w = p.rx * two_inv_n;
        const float grad_b = p.r * two_inv_n;
        new_wb[0] = w - lr * grad_w;
        new_wb[1] = b - lr * grad_b;
      }
    }
    __syncthreads();
    w = new_wb[0];
    b = new_wb[1];
  }
  if (rank == 0 && threadIdx.x == 0) {
    params[0] = w;
    params[1] = b;
  }
  cluster.sync();  // no block may exit while another can still read its shared memory
#endif
}

// ---------------------------------------------------------------------------------------------
// Host helpers.

// The noise as chapter 04 makes it (Philox4x32-10, an even count of normals), so the data match.
void generate_normal(float* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  workbook::CurandGenerator generator(workbook::RngLocation::kDevice, seed, stream);
  generator.normal(out, static_cast<std::size_t>(count), 0.0f, 1.0f);
}

// Variant 6's segments: K contiguous pieces, each a multiple of 4 points long (16-byte aligned).
struct Segment {
  std::int64_t start;
  std::int64_t count;
};
Segment segment_of(std::int64_t n, int k) {
  const std::int64_t length = ceil_div(ceil_div(n, kStreamCount), 4) * 4;
  const std::int64_t start = std::min(n, k * length);
  return {start, std::min(length, n - start)};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (int i = 1; i <= kVariantCount; ++i) v.push_back(static_cast<Variant>(i));
  return v;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kUnfused: return "unfused";
    case Variant::kAtomic: return "atomic";
    case Variant::kBlockReduce: return "block_reduce";
    case Variant::kLastBlock: return "last_block";
    case Variant::kGraph: return "graph";
    case Variant::kStreams: return "streams";
    case Variant::kPersistent: return "persistent";
  }
  return "?";
}

const char* variant_detail(Variant v) {
  switch (v) {
    case Variant::kUnfused: return "04's kernels: forward, loss (2), backward (2), step";
    case Variant::kAtomic: return "fused, a float atomicAdd per point, + update kernel";
    case Variant::kBlockReduce: return "fused, one partial per block, + update kernel";
    case Variant::kLastBlock: return "fused, the last block reduces and steps";
    case Variant::kGraph: return "variant 4, all epochs in one CUDA graph";
    case Variant::kStreams: return "variant 3 split over 4 streams, joined by events";
    case Variant::kPersistent: return "all epochs in one launch on one cluster; data in registers when it fits";
  }
  return "?";
}

bool is_deterministic(Variant v) { return v != Variant::kAtomic; }

FusedRegression::FusedRegression(const Config& config, cudaStream_t stream)
    : config_(config),
      train_points_(regression::split_of(config.points).train),
      test_points_(regression::split_of(config.points).test),
      stream_(stream),
      host_(4) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device));
  capability_ = device_compute_capability(device);  // tests may lower it: see compute_capability.h
  // The kernel's code must be compiled for sm_90 too: a build for older GPUs only (or PTX of an
  // older GPU, compiled by the driver) holds the __trap() body. ptxVersion is what __CUDA_ARCH__ was.
  cudaFuncAttributes cluster_kernel{};
  CUDA_CHECK(cudaFuncGetAttributes(&cluster_kernel, persistent_cluster_kernel));
  cluster_code_arch_ = cluster_kernel.ptxVersion;
  if (capability_.at_least(9, 0) && cluster_code_arch_ >= 90) {
    // The largest cluster this GPU can place: 16 (non-portable) when a GPC has 16 free SMs, else 8.
    CUDA_CHECK(cudaFuncSetAttribute(persistent_cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (int size = kMaxClusterBlocks; size >= 1 && max_cluster_ == 0; size /= 2) {
      cudaLaunchConfig_t cfg{};
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = size;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.gridDim = dim3(size);
      cfg.blockDim = dim3(kClusterThreads);
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int clusters = 0;
      CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, persistent_cluster_kernel, &cfg));
      if (clusters > 0) max_cluster_ = size;
    }
  }
  NvtxRange range("make data");
  const std::int64_t even_points = ceil_div(config.points, 2) * 2;
  x_ = DeviceBuffer<float>(config.points);
  y_ = DeviceBuffer<float>(config.points);
  pred_ = DeviceBuffer<float>(even_points);
  const std::size_t partial_count = std::max<std::size_t>(2 * regression::reduction_blocks(config.points),
                                                          3 * static_cast<std::size_t>(multiprocessors_) * kBlocksPerSm) +
                                    2;  // + variant 1's two gradients, kept past every partial
  partials_ = DeviceBuffer<float>(partial_count);
  atomic_slots_ = DeviceBuffer<float>(kAtomicSlots * kSlotStride);
  params_ = DeviceBuffer<float>(2);
  losses_ = DeviceBuffer<float>(config.epochs);
  test_mse_ = DeviceBuffer<float>(1);
  done_count_ = DeviceBuffer<unsigned>(1);
  CUDA_CHECK(cudaMemsetAsync(done_count_.data(), 0, done_count_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(partials_.data(), 0, partials_.bytes(), stream_));
  const float* noise = nullptr;
  if (config.noise > 0.0) {
    generate_normal(pred_.data(), even_points, config.seed, stream_);  // pred is free until training
    noise = pred_.data();
  }
  regression::launch_make_data(x_.data(), y_.data(), noise, static_cast<float>(config.noise), config.points, stream_);
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

FusedRegression::~FusedRegression() {
  if (graph_exec_ != nullptr) (void)cudaGraphExecDestroy(graph_exec_);
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
}

Dataset FusedRegression::copy_dataset() const {
  Dataset d;
  d.split = regression::split_of(config_.points);
  d.x.resize(config_.points);
  d.y.resize(config_.points);
  CUDA_CHECK(cudaMemcpy(d.x.data(), x_.data(), x_.bytes(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(d.y.data(), y_.data(), y_.bytes(), cudaMemcpyDeviceToHost));
  return d;
}

std::string FusedRegression::skip_reason(Variant v) const {
  if (v != Variant::kPersistent || max_cluster_ > 0) return "";
  if (!capability_.at_least(9, 0)) {
    return "needs thread-block clusters and distributed shared memory, compute capability 9.0 (Hopper) or newer; "
           "this GPU is " + capability_.text();
  }
  if (cluster_code_arch_ < 90) {
    return "this build has no sm_90 code for it (its code here was compiled for compute capability " +
           std::to_string(cluster_code_arch_ / 10) + "." + std::to_string(cluster_code_arch_ % 10) +
           "): build with -arch=sm_90 or the default architectures";
  }
  return "no thread-block cluster of 1 to 16 blocks of 512 threads fits on this GPU now";
}

int FusedRegression::cluster_blocks() const {
  const std::int64_t wanted = ceil_div(ceil_div(train_points_, 4), static_cast<std::int64_t>(kClusterThreads) * kUnroll);
  return static_cast<int>(std::clamp<std::int64_t>(wanted, 1, std::max(1, max_cluster_)));
}

LaunchShape FusedRegression::shape(Variant v) const {
  const std::int64_t n = train_points_;
  switch (v) {
    case Variant::kUnfused: return {regression::reduction_blocks(n), 256, 7};
    case Variant::kAtomic: return {fused_blocks(n, multiprocessors_), kThreads, 2};
    case Variant::kBlockReduce: return {fused_blocks(n, multiprocessors_), kThreads, 2};
    case Variant::kLastBlock: return {fused_blocks(n, multiprocessors_), kThreads, 1};
    case Variant::kGraph: return {fused_blocks(n, multiprocessors_), kThreads, 0};
    case Variant::kStreams:
      return {std::max(1, std::min(fused_blocks(segment_of(n, 0).count, multiprocessors_),
                                   multiprocessors_ * kBlocksPerSm / kStreamCount)),
              kThreads, kStreamCount + 1};
    case Variant::kPersistent: return {cluster_blocks(), kClusterThreads, 0};
  }
  return {};
}

// Queues one epoch of variant v on stream_ (variants 1-4 and 6). `marks`, when given, receives an
// event after each kernel (variant 1: 4 steps; variant 3: fused, update). `trace`, when given,
// puts a pair of events around each operation (--trace); without it `op` only runs the launch.
void FusedRegression::launch_epoch(Variant v, int epoch, std::vector<Event>* marks,
                                   streams_events::TraceRecorder* trace, int first_track) {
  const std::int64_t n = train_points_;
  const StepArgs step{params_.data(), losses_.data(), epoch, static_cast<float>(config_.lr),
                      static_cast<float>(1.0 / n), static_cast<float>(2.0 / n)};
  auto mark = [&](int k) {
    if (marks != nullptr) (*marks)[k].record(stream_);
  };
  auto op = [&](cudaStream_t s, int track, const char* name, const char* category, auto&& enqueue) {
    if (trace == nullptr) return enqueue();
    trace->op(s, first_track + track, "e" + std::to_string(epoch) + " " + name, category, enqueue);
  };
  const LaunchShape s = shape(v);
  switch (v) {
    case Variant::kUnfused: {  // chapter 04's launchers, unchanged: 7 kernels per epoch
      float* grads = partials_.data() + partials_.size() - 2;  // past 04's 2 * reduction_blocks partials
      op(stream_, 0, "forward", "compute",
         [&] { regression::launch_forward(x_.data(), params_.data(), pred_.data(), n, stream_); });
      mark(1);
      op(stream_, 0, "loss (2 kernels)", "compute", [&] {
        regression::launch_mse_loss(pred_.data(), y_.data(), n, partials_.data(), losses_.data() + epoch, stream_);
      });
      mark(2);
      op(stream_, 0, "backward (2 kernels)", "compute", [&] {
        regression::launch_mse_backward(pred_.data(), y_.data(), x_.data(), n, partials_.data(), grads, stream_);
      });
      mark(3);
      op(stream_, 0, "step", "step",
         [&] { regression::launch_sgd_step(params_.data(), grads, static_cast<float>(config_.lr), stream_); });
      mark(4);
      break;
    }
    case Variant::kAtomic:
      atomic_sums_kernel<<<s.blocks, kThreads, 0, stream_>>>(x_.data(), y_.data(), n, params_.data(),
                                                             atomic_slots_.data());
      CUDA_CHECK_LAUNCH();
      atomic_update_kernel<<<1, 32, 0, stream_>>>(atomic_slots_.data(), step);
      CUDA_CHECK_LAUNCH();
      break;
    case Variant::kBlockReduce:
      op(stream_, 0, "fused sums", "compute", [&] {
        fused_sums_kernel<false><<<s.blocks, kThreads, 0, stream_>>>(x_.data(), y_.data(), n, params_.data(),
                                                                     partials_.data(), s.blocks, nullptr, step);
        CUDA_CHECK_LAUNCH();
      });
      mark(1);
      op(stream_, 0, "update", "step", [&] {
        update_kernel<<<1, kThreads, 0, stream_>>>(partials_.data(), s.blocks, s.blocks, step);
        CUDA_CHECK_LAUNCH();
      });
      mark(2);
      break;
    case Variant::kLastBlock:
    case Variant::kGraph:
      op(stream_, 0, "fused sums + last block's step", "compute", [&] {
        fused_sums_kernel<true><<<s.blocks, kThreads, 0, stream_>>>(
            x_.data(), y_.data(), n, params_.data(), partials_.data(), s.blocks, done_count_.data(), step);
        CUDA_CHECK_LAUNCH();
      });
      break;
    case Variant::kStreams: {
      // Fork: every side stream waits for this epoch's w and b; join: the update waits for all.
      static constexpr const char* kSegmentNames[] = {"segment 1", "segment 2", "segment 3", "segment 4"};
      static_assert(sizeof(kSegmentNames) / sizeof(kSegmentNames[0]) == kStreamCount, "one name per side stream");
      const int stride = s.blocks * kStreamCount;
      params_ready_.record(stream_);
      for (int k = 0; k < kStreamCount; ++k) {
        const Segment seg = segment_of(n, k);
        cudaStream_t side = side_streams_[k].get();
        CUDA_CHECK(cudaStreamWaitEvent(side, params_ready_.get(), 0));
        op(side, 1 + k, kSegmentNames[k], "compute", [&] {
          fused_sums_kernel<false><<<s.blocks, kThreads, 0, side>>>(
              x_.data() + seg.start, y_.data() + seg.start, seg.count, params_.data(),
              partials_.data() + k * s.blocks, stride, nullptr, step);
          CUDA_CHECK_LAUNCH();
        });
        side_done_[k].record(side);
        CUDA_CHECK(cudaStreamWaitEvent(stream_, side_done_[k].get(), 0));
      }
      op(stream_, 0, "update", "step", [&] {
        update_kernel<<<1, kThreads, 0, stream_>>>(partials_.data(), stride, stride, step);
        CUDA_CHECK_LAUNCH();
      });
      break;
    }
    case Variant::kPersistent:
      throw std::logic_error("launch_epoch: variant 7 runs every epoch in one launch");
  }
}

// Variant 7's single launch: one cluster of shape(kPersistent).blocks blocks.
void FusedRegression::launch_all_epochs(Variant v) {
  if (v != Variant::kPersistent) throw std::logic_error("launch_all_epochs: only variant 7");
  const int blocks = cluster_blocks();
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = blocks;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(kClusterThreads);
  cfg.stream = stream_;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  const std::int64_t n = train_points_;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, persistent_cluster_kernel, static_cast<const float*>(x_.data()),
                                static_cast<const float*>(y_.data()), n, params_.data(), losses_.data(),
                                config_.epochs, static_cast<float>(config_.lr), static_cast<float>(1.0 / n),
                                static_cast<float>(2.0 / n)));
  CUDA_CHECK_LAUNCH();
}

// Variant 5: captures variant 4's launches for every epoch into one graph, once per object.
void FusedRegression::build_graph() {
  if (graph_exec_ != nullptr) return;
  NvtxRange range("capture graph");
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  for (int epoch = 0; epoch < config_.epochs; ++epoch) launch_epoch(Variant::kLastBlock, epoch, nullptr);
  CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
  CUDA_CHECK(cudaGraphInstantiate(&graph_exec_, graph_, 0));
  CUDA_CHECK(cudaGraphUpload(graph_exec_, stream_));
}

void FusedRegression::prepare(Variant v) {
  if (!supports(v)) throw std::runtime_error(std::string("variant ") + variant_name(v) + ": " + skip_reason(v));
  if (v == Variant::kStreams && side_streams_.empty()) {
    for (int k = 0; k < kStreamCount; ++k) {
      side_streams_.emplace_back();
      side_done_.emplace_back();
    }
  }
  if (v == Variant::kGraph) build_graph();
}

TrainingResult FusedRegression::train(Variant v) {
  NvtxRange range(variant_name(v));
  prepare(v);
  // Outside the timed region: the start values, and variant 2's zeroed slots.
  set_params_kernel<<<1, 1, 0, stream_>>>(params_.data());
  CUDA_CHECK_LAUNCH();
  if (v == Variant::kAtomic) CUDA_CHECK(cudaMemsetAsync(atomic_slots_.data(), 0, atomic_slots_.bytes(), stream_));

  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  start.record(stream_);
  if (v == Variant::kGraph) {
    CUDA_CHECK(cudaGraphLaunch(graph_exec_, stream_));
  } else if (v == Variant::kPersistent) {
    launch_all_epochs(v);
  } else {
    for (int epoch = 0; epoch < config_.epochs; ++epoch) launch_epoch(v, epoch, nullptr);
  }
  stop.record(stream_);
  stop.synchronize();

  TrainingResult r;
  r.training_ms = elapsed_ms(start, stop);
  // The test loss with 04's launchers, outside the timed loop.
  const std::int64_t n = train_points_;
  regression::launch_forward(x_.data() + n, params_.data(), pred_.data() + n, test_points_, stream_);
  regression::launch_mse_loss(pred_.data() + n, y_.data() + n, test_points_, partials_.data(), test_mse_.data(),
                              stream_);
  PinnedBuffer<float> losses(config_.epochs);
  CUDA_CHECK(cudaMemcpyAsync(losses.data(), losses_.data(), losses_.bytes(), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaMemcpyAsync(host_.data(), params_.data(), 2 * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaMemcpyAsync(host_.data() + 2, test_mse_.data(), sizeof(float), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int e = 0; e < config_.epochs; ++e) {
    r.losses.push_back(losses.data()[e]);
    if (regression::is_divergent(r.losses.back(), r.losses.front())) {
      r.diverged_at = e;  // the loop ran on (no host checks inside it); what follows means nothing
      return r;
    }
  }
  r.w = host_.data()[0];
  r.b = host_.data()[1];
  r.test_mse = host_.data()[2];
  return r;
}

Breakdown FusedRegression::breakdown(Variant v) {
  NvtxRange range("breakdown");
  std::vector<std::string> names;
  if (v == Variant::kUnfused) names = {"forward", "loss", "backward", "step"};
  else if (v == Variant::kBlockReduce) names = {"fused kernel", "update"};
  else throw std::logic_error("breakdown: variant 1 or 3 only");
  const int k = static_cast<int>(names.size());
  set_params_kernel<<<1, 1, 0, stream_>>>(params_.data());
  CUDA_CHECK_LAUNCH();
  std::vector<std::vector<Event>> marks(config_.epochs);
  for (int epoch = 0; epoch < config_.epochs; ++epoch) {
    for (int i = 0; i <= k; ++i) marks[epoch].emplace_back(EventTiming::kEnabled);
    marks[epoch][0].record(stream_);
    launch_epoch(v, epoch, &marks[epoch]);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  Breakdown out;
  for (int i = 0; i < k; ++i) {
    std::vector<double> ms;
    for (int epoch = 0; epoch < config_.epochs; ++epoch) ms.push_back(elapsed_ms(marks[epoch][i], marks[epoch][i + 1]));
    out.emplace_back(names[i], median(ms));
  }
  return out;
}

void FusedRegression::trace_epochs(Variant v, int warmup, int epochs, streams_events::TraceRecorder& trace,
                                   int first_track) {
  if (v == Variant::kAtomic || v == Variant::kGraph || v == Variant::kPersistent) {
    throw std::logic_error("trace_epochs: variants 1, 3, 4 and 6 only");
  }
  if (warmup < 0 || epochs < 1 || warmup + epochs > config_.epochs) {
    throw std::invalid_argument("trace_epochs: warm-up + traced epochs must fit in --epochs");
  }
  NvtxRange range("trace");
  prepare(v);
  set_params_kernel<<<1, 1, 0, stream_>>>(params_.data());
  CUDA_CHECK_LAUNCH();
  for (int epoch = 0; epoch < warmup; ++epoch) launch_epoch(v, epoch, nullptr);
  trace.mark_origin(stream_);  // time zero: the first traced variant's; variant 6's side streams fork after it
  for (int epoch = warmup; epoch < warmup + epochs; ++epoch) launch_epoch(v, epoch, nullptr, &trace, first_track);
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // variant 6 joins its side streams into stream_ every epoch
}

double measure_copy_gbps(std::size_t bytes, cudaStream_t stream) {
  NvtxRange range("copy ceiling");
  DeviceBuffer<char> source(bytes), destination(bytes);
  CUDA_CHECK(cudaMemsetAsync(source.data(), 1, bytes, stream));  // initialised: initcheck stays quiet
  const Stats t = time_on_stream(stream, {2, 10}, [&] {
    CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice, stream));
  });
  return 2.0 * static_cast<double>(bytes) / (t.median * 1e6);
}

}  // namespace workbook::fused

// persistent_kernels.cu: chapter 05's second story. Variants 1-6 (fused_kernels.cu) launch at
// least once per epoch, so the host and the launch path set a floor of a few microseconds an
// epoch. Variants 7 and 8 launch once for every epoch: the blocks stay resident and meet at a
// barrier each epoch instead of at a kernel boundary. A barrier across blocks is only safe when
// every block is resident at once. A thread-block cluster (Hopper, compute capability 9.0)
// guarantees that for up to 16 blocks, and lets them read each other's shared memory (variant 7);
// a cooperative launch guarantees it for as many blocks as fit on the GPU at once (variant 8),
// and with every SM's registers and shared memory the training set itself fits on chip: after
// the first epoch, no epoch reads X or y from DRAM.
#include "fused_kernels.h"

#include "cuda_check.h"
#include "format.h"
#include "fused_sums.cuh"
#include "on_chip_slice.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <string>

namespace workbook::fused {
namespace {

namespace cg = cooperative_groups;

constexpr int kMaxClusterBlocks = 16;  // Hopper's largest cluster (a non-portable size)

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
        new_wb[0] = w - lr * (p.rx * two_inv_n);
        new_wb[1] = b - lr * (p.r * two_inv_n);
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

// Variant 8: every epoch in one cooperative launch, one block per SM (as many as fit at once:
// the occupancy API says how many). Each block loads its slice of the training set once, into
// registers and shared memory (common/on_chip_slice.cuh), and never reads X or y from memory
// again. Per epoch: each block's three sums go to partials row (epoch % 2), one grid-wide
// barrier, then every block adds all blocks' partials with the same code in the same order, so
// every block holds the same bits of w and b without a second barrier. A row is written again two
// epochs later, after the next barrier, which every reader of it has passed.
__global__ void __launch_bounds__(kOnChipThreads, 1)
    on_chip_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n, float* params,
                   float* losses, float* partials, int epochs, float lr, float inv_n, float two_inv_n) {
  cg::grid_group grid = cg::this_grid();
  extern __shared__ float4 slice_memory[];
  __shared__ float new_wb[2];
  const int blocks = static_cast<int>(gridDim.x);
  OnChipSlice slice;
  slice.load(x, y, n, slice_memory);  // the only reads of X and y from memory in this launch
  __syncthreads();

  float w = params[0];
  float b = params[1];
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const Sums s = block_sums<kOnChipThreads>(slice.sums(w, b));
    float* row = partials + (epoch & 1) * 3 * blocks;
    if (threadIdx.x == 0) {
      row[blockIdx.x] = s.rr;
      row[blocks + blockIdx.x] = s.rx;
      row[2 * blocks + blockIdx.x] = s.r;
    }
    grid.sync();  // every block's partials are written and visible to every block
    const Sums total = reduce_partials<kOnChipThreads>(row, blocks, blocks);  // the same order everywhere
    if (threadIdx.x == 0) {
      if (blockIdx.x == 0) losses[epoch] = total.rr * inv_n;
      new_wb[0] = w - lr * (total.rx * two_inv_n);
      new_wb[1] = b - lr * (total.r * two_inv_n);
    }
    __syncthreads();
    w = new_wb[0];
    b = new_wb[1];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    params[0] = w;
    params[1] = b;
  }
}

// A launch of a kernel on a cluster of `blocks` blocks (one cluster: the whole grid).
cudaLaunchConfig_t cluster_launch(int blocks, cudaLaunchAttribute* attr, cudaStream_t stream) {
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = blocks;
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(kClusterThreads);
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

}  // namespace

// Whether and how large a cluster this GPU can run. 
void FusedTraining::probe_clusters() {
  // The kernel's code must be compiled for sm_90 too: a build for older GPUs only (or PTX of an
  // older GPU, compiled by the driver) holds the __trap() body. ptxVersion is what __CUDA_ARCH__ was.
  cudaFuncAttributes cluster_kernel{};
  CUDA_CHECK(cudaFuncGetAttributes(&cluster_kernel, persistent_cluster_kernel));
  cluster_code_arch_ = cluster_kernel.ptxVersion;
  if (capability_.at_least(9, 0) && cluster_code_arch_ >= 90) {
    // The largest cluster this GPU can place: 16 (non-portable) when a GPC has 16 free SMs, else 8.
    CUDA_CHECK(cudaFuncSetAttribute(persistent_cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (int size = kMaxClusterBlocks; size >= 1 && max_cluster_ == 0; size /= 2) {
      cudaLaunchAttribute attr{};
      const cudaLaunchConfig_t cfg = cluster_launch(size, &attr, stream_);
      int clusters = 0;
      CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, persistent_cluster_kernel, &cfg));
      if (clusters > 0) max_cluster_ = size;
    }
  }
}

int FusedTraining::cluster_blocks() const {
  const std::int64_t wanted = ceil_div(ceil_div(train_points_, 4), static_cast<std::int64_t>(kClusterThreads) * kUnroll);
  return static_cast<int>(std::clamp<std::int64_t>(wanted, 1, std::max(1, max_cluster_)));
}

void FusedTraining::persistent_all_epochs() {
  const std::int64_t n = train_points_;
  cudaLaunchAttribute attr{};
  const cudaLaunchConfig_t cfg = cluster_launch(cluster_blocks(), &attr, stream_);
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, persistent_cluster_kernel, static_cast<const float*>(x_.data()),
                                static_cast<const float*>(y_.data()), n, params_.data(), losses_.data(),
                                config_.epochs, static_cast<float>(config_.lr), static_cast<float>(1.0 / n),
                                static_cast<float>(2.0 / n)));
  CUDA_CHECK_LAUNCH();
}

// Variant 8's room on this GPU (common/on_chip_room.h): the blocks that fit at once with the
// most dynamic shared memory a block may have.
void FusedTraining::probe_on_chip() { on_chip_ = probe_on_chip_room(reinterpret_cast<const void*>(on_chip_kernel)); }

std::string FusedTraining::on_chip_text() const {
  if (!on_chip_.available()) return on_chip_.unavailable;
  const OnChipCapacity& room = on_chip_.capacity;
  return format("%d blocks x %d threads hold %.1f MB in registers + %.1f MB in shared memory = %lld training points; "
                "this run's %lld need %.1f MB", room.blocks, kOnChipThreads, room.register_bytes / 1e6,
                room.shared_bytes / 1e6, static_cast<long long>(room.points()),
                static_cast<long long>(train_points_), 8.0 * train_points_ / 1e6);
}

void FusedTraining::on_chip_all_epochs() {
  const float* x = x_.data();
  const float* y = y_.data();
  std::int64_t n = train_points_;
  float* params = params_.data();
  float* losses = losses_.data();
  float* partials = on_chip_partials_.data();
  int epochs = config_.epochs;
  float lr = static_cast<float>(config_.lr), inv_n = static_cast<float>(1.0 / n), two_inv_n = static_cast<float>(2.0 / n);
  void* args[] = {&x, &y, &n, &params, &losses, &partials, &epochs, &lr, &inv_n, &two_inv_n};
  // A cooperative launch refuses (cudaErrorCooperativeLaunchTooLarge) rather than deadlock when
  // the blocks cannot all be resident at once.
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(on_chip_kernel), dim3(on_chip_.capacity.blocks),
                                         dim3(kOnChipThreads), args,
                                         static_cast<std::size_t>(on_chip_.shared_bytes_for(train_points_)), stream_));
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::fused

// barrier.cu: five ways for the blocks of variant 8's launch to meet, each timed alone.
//
// A grid-wide barrier must do two things: tell every block that all the others have arrived, and
// make each block's writes before it visible to every block after it. The kinds differ in how
// many round trips through L2 that takes, and who waits on whom:
//   grid.sync()    cooperative_groups' barrier, what variant 8 uses;
//   counter        one thread per block arrives on one counter (an atomic with release semantics),
//                  the last to arrive bumps a generation number, the others spin until it changes
//                  (the generation is a sense flag with more bits: it never has to be reset);
//   flags          every block writes its own flag (the round number, a release store) and one
//                  warp of every block reads all the flags: no atomic, no single hot word, but
//                  every block reads every other block's word;
//   hierarchical   the blocks of a thread-block cluster meet at the hardware cluster barrier, then
//                  one block per cluster arrives on the counter, then the cluster meets again:
//                  fewer arrivals on the counter, two cluster barriers more (Hopper);
//   kernel boundary the end of one kernel and the start of the next, as kernel nodes of a CUDA
//                  graph: what variant 5's graph pays per epoch (variant 4 launches from the host).
#include "barrier.h"

#include "compute_capability.h"
#include "cuda_check.h"
#include "event_timer.h"
#include "fused_kernels.h"
#include "stream.h"

#include <cooperative_groups.h>
#include <cuda/atomic>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>

namespace workbook::fused {
namespace {

namespace cg = cooperative_groups;

enum class Barrier { kNone, kGridSync, kCounter, kFlags, kHierarchical };
constexpr int kFlagsPerLane = 8;  // the flags barrier's warp reads up to 32 x 8 = 256 blocks' flags

using DeviceAtomic = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;

// One thread of each of `parties` arrives; returns when all have. The arrival is acq_rel: what
// the thread's block wrote before is visible to whoever sees the count, and the others' writes to it.
__device__ void counter_arrive_and_wait(unsigned* arrived, unsigned* generation, unsigned parties) {
  DeviceAtomic count(*arrived);
  DeviceAtomic gen(*generation);
  // Read before arriving: the generation cannot move until this thread has arrived too.
  const unsigned mine = gen.load(cuda::memory_order_relaxed);
  if (count.fetch_add(1, cuda::memory_order_acq_rel) == parties - 1) {
    count.store(0, cuda::memory_order_relaxed);  // ordered before the release below
    gen.store(mine + 1, cuda::memory_order_release);
  } else {
    while (gen.load(cuda::memory_order_acquire) == mine) {
    }
  }
}

__device__ void counter_barrier(unsigned* arrived, unsigned* generation) {
  __syncthreads();  // the whole block has arrived
  if (threadIdx.x == 0) counter_arrive_and_wait(arrived, generation, gridDim.x);
  __syncthreads();  // the rest of the block waits for thread 0
}

// flags[b] holds the last round block b has reached (0 before the launch). The loads that poll are
// relaxed, so that a lane's eight are in flight at once (an acquire load would hold back the ones
// after it); one acquire fence after them orders what follows.
__device__ void flag_barrier(unsigned* flags, unsigned round) {
  __syncthreads();
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) DeviceAtomic(flags[blockIdx.x]).store(round, cuda::memory_order_release);
    bool all_there;
    do {
      all_there = true;
#pragma unroll
      for (int i = 0; i < kFlagsPerLane; ++i) {
        const unsigned b = threadIdx.x + 32 * i;
        if (b < gridDim.x) all_there &= DeviceAtomic(flags[b]).load(cuda::memory_order_relaxed) >= round;
      }
    } while (!__all_sync(0xffffffffu, all_there));
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
  }
  __syncthreads();
}

// cluster.sync() releases and acquires at cluster scope; the leader's acq_rel arrival carries the
// cluster's writes on to the device (release is cumulative), and the second cluster.sync() brings
// the other clusters' writes to every block of this one.
__device__ void hierarchical_barrier(unsigned* arrived, unsigned* generation) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the host runs this kind only where they exist
#else
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  if (cluster.block_rank() == 0 && threadIdx.x == 0) {
    counter_arrive_and_wait(arrived, generation, gridDim.x / cluster.num_blocks());
  }
  cluster.sync();
#endif
}

// The check a barrier must pass before it is timed: before round r's barrier each block posts r + 1
// in its slot (plain stores, as a kernel's data), after it every block reads every block's slot
// (plain loads) and counts those that do not hold r + 1. check: [0] that count, then two rows of
// slots, by round parity: a block posts round r + 2 into a row only after barrier r + 1, which
// every reader of round r has reached.
__device__ void post_round(unsigned* check, int r) {
  if (threadIdx.x == 0) check[1 + (r & 1) * gridDim.x + blockIdx.x] = static_cast<unsigned>(r) + 1;
}
__device__ void verify_round(unsigned* check, int r) {
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    if (check[1 + (r & 1) * gridDim.x + b] != static_cast<unsigned>(r) + 1) atomicAdd(check, 1u);
  }
}

// counters: [0] the arrival count, [1] the generation, [2, 2 + blocks) the flags. kChecked: each
// round posted and verified around the barrier (the timed launches leave it out).
template <Barrier kBarrier, bool kChecked = false>
__global__ void __launch_bounds__(kOnChipThreads) barriers_kernel(int rounds, unsigned* counters, unsigned* check) {
  for (int r = 0; r < rounds; ++r) {
    if constexpr (kChecked) post_round(check, r);
    if constexpr (kBarrier == Barrier::kGridSync) cg::this_grid().sync();
    if constexpr (kBarrier == Barrier::kCounter) counter_barrier(counters, counters + 1);
    if constexpr (kBarrier == Barrier::kFlags) flag_barrier(counters + 2, static_cast<unsigned>(r) + 1);
    if constexpr (kBarrier == Barrier::kHierarchical) hierarchical_barrier(counters, counters + 1);
    if constexpr (kChecked) verify_round(check, r);
  }
}

// The kernel boundary's check: kernel `round` of a sequence first verifies what the one before it
// posted, then posts its own.
__global__ void __launch_bounds__(kOnChipThreads) boundary_check_kernel(int round, unsigned* check) {
  if (round > 0) verify_round(check, round - 1);
  post_round(check, round);
}

// What every kind shares: variant 8's grid (its blocks, kOnChipThreads threads each), the
// counters, and the clock.
class BarrierBench {
 public:
  BarrierBench(int blocks, cudaStream_t stream)
      : blocks_(blocks), stream_(stream), counters_(2 + blocks), check_(1 + 2 * static_cast<std::size_t>(blocks)) {
    CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.bytes(), stream_));
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    capability_ = device_compute_capability(device);
  }
  int blocks() const { return blocks_; }
  const ComputeCapability& capability() const { return capability_; }

  // One cooperative launch of `rounds` barriers (every block resident at once, or a refusal), the
  // flags zeroed before it. With a cluster size, through cudaLaunchKernelEx with both attributes.
  template <Barrier kBarrier, bool kChecked = false>
  void launch(int rounds, int cluster = 0) {
    CUDA_CHECK(cudaMemsetAsync(counters_.data() + 2, 0, blocks_ * sizeof(unsigned), stream_));
    unsigned* counters = counters_.data();
    unsigned* check = kChecked ? check_.data() : nullptr;
    if (cluster == 0) {
      void* args[] = {&rounds, &counters, &check};
      CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(barriers_kernel<kBarrier, kChecked>),
                                             dim3(blocks_), dim3(kOnChipThreads), args, 0, stream_));
    } else {
      cudaLaunchAttribute attrs[2]{};
      attrs[0].id = cudaLaunchAttributeCooperative;
      attrs[0].val.cooperative = 1;
      attrs[1].id = cudaLaunchAttributeClusterDimension;
      attrs[1].val.clusterDim = {static_cast<unsigned>(cluster), 1, 1};
      const cudaLaunchConfig_t cfg = config(attrs, 2);
      CUDA_CHECK(cudaLaunchKernelEx(&cfg, barriers_kernel<kBarrier, kChecked>, rounds, counters, check));
    }
    CUDA_CHECK_LAUNCH();
  }

  // The median of 5 runs of `run` (after 2 warm-ups), in ms, CUDA events around each.
  double median_ms(const std::function<void()>& run) { return time_on_stream(stream_, {2, 5}, run).median; }

  // Slots that did not hold their round after the barrier, over `rounds` checked rounds of one
  // kind (0 for a barrier that works).
  template <Barrier kBarrier>
  unsigned mismatches(int rounds, int cluster = 0) {
    CUDA_CHECK(cudaMemsetAsync(check_.data(), 0, check_.bytes(), stream_));
    launch<kBarrier, true>(rounds, cluster);
    return read_mismatches();
  }
  unsigned boundary_mismatches(int launches) {
    CUDA_CHECK(cudaMemsetAsync(check_.data(), 0, check_.bytes(), stream_));
    for (int i = 0; i <= launches; ++i) {  // the last one only verifies the one before it
      boundary_check_kernel<<<blocks_, kOnChipThreads, 0, stream_>>>(i, check_.data());
      CUDA_CHECK_LAUNCH();
    }
    return read_mismatches();
  }

  // ns per barrier of one kind: its launch of `rounds` less the empty launch's, over the rounds.
  template <Barrier kBarrier>
  double ns_per_barrier(int rounds, double empty_ms, int cluster = 0) {
    return (median_ms([&] { launch<kBarrier>(rounds, cluster); }) - empty_ms) * 1e6 / rounds;
  }

  // The largest cluster (8, 4 or 2 blocks) that divides the grid and whose clusters all fit at
  // once; 0 if none does.
  int largest_cluster() {
    for (int size = 8; size >= 2; size /= 2) {
      if (blocks_ % size != 0) continue;
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim = {static_cast<unsigned>(size), 1, 1};
      const cudaLaunchConfig_t cfg = config(&attr, 1);
      int clusters = 0;
      CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, barriers_kernel<Barrier::kHierarchical>, &cfg));
      if (clusters * size >= blocks_) return size;
    }
    return 0;
  }

  // ns per kernel boundary: a CUDA graph of `launches` empty kernels of the same grid.
  double ns_per_kernel_boundary(int launches) {
    cudaGraph_t graph = nullptr;
    {
      StreamCapture capture(stream_);
      for (int i = 0; i < launches; ++i) {
        barriers_kernel<Barrier::kNone><<<blocks_, kOnChipThreads, 0, stream_>>>(0, counters_.data(), nullptr);
        CUDA_CHECK_LAUNCH();
      }
      graph = capture.end();
    }
    const GraphExec exec(graph);
    return median_ms([&] { exec.launch(stream_); }) * 1e6 / launches;
  }

 private:
  unsigned read_mismatches() {
    unsigned count = 0;
    CUDA_CHECK(cudaMemcpyAsync(&count, check_.data(), sizeof count, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return count;
  }
  cudaLaunchConfig_t config(cudaLaunchAttribute* attrs, unsigned attr_count) const {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(blocks_);
    cfg.blockDim = dim3(kOnChipThreads);
    cfg.stream = stream_;
    cfg.attrs = attrs;
    cfg.numAttrs = attr_count;
    return cfg;
  }

  int blocks_;
  cudaStream_t stream_;
  DeviceBuffer<unsigned> counters_;
  DeviceBuffer<unsigned> check_;  // the mismatch count, then two rows of slots (post_round)
  ComputeCapability capability_;
};

// Why the hierarchical kind cannot run here ("" if it can): asked before any cluster query, which
// a GPU or a build without clusters would refuse.
std::string hierarchical_skip_reason(const BarrierBench& bench) {
  int device = 0, cluster_launch = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device));
  if (!bench.capability().at_least(9, 0) || cluster_launch == 0) {
    return "needs thread-block clusters (compute capability 9.0)";
  }
  cudaFuncAttributes kernel{};
  CUDA_CHECK(cudaFuncGetAttributes(&kernel, barriers_kernel<Barrier::kHierarchical>));
  if (kernel.ptxVersion < 90) return "this build has no sm_90 code for it";
  return "";
}

}  // namespace

BarrierCosts measure_grid_barriers(int blocks, cudaStream_t stream, int rounds) {
  BarrierBench bench(blocks, stream);
  const double empty = bench.median_ms([&] { bench.launch<Barrier::kNone>(rounds); });
  BarrierCosts c;
  c.blocks = blocks;
  auto kind = [](const char* what) {
    BarrierCost k;
    k.what = what;
    return k;
  };
  // Each kind checked over `rounds` rounds, then timed.
  auto measured = [&](BarrierCost k, auto checked, auto timed) {
    k.mismatches = checked();
    k.checked = true;
    k.ns = timed();
    c.kinds.push_back(k);
  };
  measured(kind("grid.sync() (cooperative_groups)"), [&] { return bench.mismatches<Barrier::kGridSync>(rounds); },
           [&] { return bench.ns_per_barrier<Barrier::kGridSync>(rounds, empty); });
  measured(kind("counter: one arrival counter, a generation flag"), [&] { return bench.mismatches<Barrier::kCounter>(rounds); },
           [&] { return bench.ns_per_barrier<Barrier::kCounter>(rounds, empty); });
  BarrierCost flags = kind("flags: one per block, all read by every block");
  if (blocks <= 32 * kFlagsPerLane) {
    measured(flags, [&] { return bench.mismatches<Barrier::kFlags>(rounds); },
             [&] { return bench.ns_per_barrier<Barrier::kFlags>(rounds, empty); });
  } else {
    flags.skipped = "reads at most " + std::to_string(32 * kFlagsPerLane) + " blocks' flags";
    c.kinds.push_back(flags);
  }
  BarrierCost hierarchical = kind("hierarchical: cluster barrier, then one arrival per cluster");
  hierarchical.skipped = hierarchical_skip_reason(bench);
  const int cluster = hierarchical.skipped.empty() ? bench.largest_cluster() : 0;
  if (hierarchical.skipped.empty() && cluster == 0) {
    hierarchical.skipped = "no cluster of 2, 4 or 8 blocks fits " + std::to_string(bench.blocks()) + " blocks";
  }
  if (hierarchical.skipped.empty()) {
    c.cluster_blocks = cluster;
    hierarchical.what += " of " + std::to_string(cluster);
    measured(hierarchical, [&] { return bench.mismatches<Barrier::kHierarchical>(rounds, cluster); },
             [&] { return bench.ns_per_barrier<Barrier::kHierarchical>(rounds, empty, cluster); });
  } else {
    c.kinds.push_back(hierarchical);
  }
  const int launches = std::min(rounds, kMaxBarrierGraphNodes);
  measured(kind("kernel boundary: the next kernel node of a CUDA graph"), [&] { return bench.boundary_mismatches(launches); },
           [&] { return bench.ns_per_kernel_boundary(launches); });
  return c;
}

}  // namespace workbook::fused

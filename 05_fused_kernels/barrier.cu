// barrier.cu: the two grid-wide barriers variant 8 could use, each timed alone.
//
// cooperative_groups' grid.sync() is what variant 8 uses. The hand-written one shows what such a
// barrier has to do: one thread per block arrives on a counter in global memory (an atomic with
// release semantics, so the block's writes are visible before its arrival is), the last to arrive
// resets the counter and bumps a generation number, and the others spin until they see it change
// (an acquire load, so the other blocks' writes are visible after). Both cost a round trip through
// L2 per block per barrier; grid.sync() does the same with a few more instructions around it.
#include "barrier.h"

#include "cuda_check.h"
#include "fused_kernels.h"
#include "stats.h"
#include "stream.h"

#include <cooperative_groups.h>
#include <cuda/atomic>

#include <vector>

namespace workbook::fused {
namespace {

namespace cg = cooperative_groups;

enum class Barrier { kNone, kGridSync, kCounter };

__device__ void counter_barrier(unsigned* arrived, unsigned* generation, unsigned blocks) {
  __syncthreads();  // the whole block has arrived
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(*arrived);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> gen(*generation);
    // Read before arriving: the generation cannot move until this block has arrived too.
    const unsigned mine = gen.load(cuda::memory_order_relaxed);
    if (count.fetch_add(1, cuda::memory_order_acq_rel) == blocks - 1) {
      count.store(0, cuda::memory_order_relaxed);  // ordered before the release below
      gen.store(mine + 1, cuda::memory_order_release);
    } else {
      while (gen.load(cuda::memory_order_acquire) == mine) {
      }
    }
  }
  __syncthreads();  // the rest of the block waits for thread 0
}

template <Barrier kBarrier>
__global__ void __launch_bounds__(kOnChipThreads) barriers_kernel(int rounds, unsigned* arrived, unsigned* generation) {
  for (int r = 0; r < rounds; ++r) {
    if constexpr (kBarrier == Barrier::kGridSync) cg::this_grid().sync();
    if constexpr (kBarrier == Barrier::kCounter) counter_barrier(arrived, generation, gridDim.x);
  }
}

template <Barrier kBarrier>
double median_ms(int blocks, int rounds, unsigned* counters, cudaStream_t stream) {
  unsigned* arrived = counters;
  unsigned* generation = counters + 1;
  void* args[] = {&rounds, &arrived, &generation};
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  std::vector<double> ms;
  for (int i = 0; i < 7; ++i) {  // 2 warm-up launches, the median of 5
    start.record(stream);
    CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(barriers_kernel<kBarrier>), dim3(blocks),
                                           dim3(kOnChipThreads), args, 0, stream));
    CUDA_CHECK_LAUNCH();
    stop.record(stream);
    stop.synchronize();
    if (i >= 2) ms.push_back(elapsed_ms(start, stop));
  }
  return median(ms);
}

}  // namespace

BarrierCosts measure_grid_barriers(int blocks, cudaStream_t stream, int rounds) {
  DeviceBuffer<unsigned> counters(2);
  CUDA_CHECK(cudaMemsetAsync(counters.data(), 0, counters.bytes(), stream));
  const double empty = median_ms<Barrier::kNone>(blocks, rounds, counters.data(), stream);
  BarrierCosts c;
  c.blocks = blocks;
  c.grid_sync_us = (median_ms<Barrier::kGridSync>(blocks, rounds, counters.data(), stream) - empty) * 1e3 / rounds;
  c.counter_us = (median_ms<Barrier::kCounter>(blocks, rounds, counters.data(), stream) - empty) * 1e3 / rounds;
  return c;
}

}  // namespace workbook::fused

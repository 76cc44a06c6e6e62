// barrier.h: what it costs the blocks of variant 8's launch to meet, measured five ways
// (fused_kernels_bench --barrier).
//
//   const BarrierCosts c = measure_grid_barriers(gpu.on_chip_capacity().blocks, stream);
//   for (const BarrierCost& b : c.kinds) std::cout << b.what << ": " << b.ns << " ns\n";
//
// Every kind runs `blocks` blocks of kOnChipThreads threads (variant 8's grid, which holds one
// block per SM; these kernels are lighter, so the hierarchical kind's clusters may be placed two
// blocks to an SM), `rounds` barriers in a row and nothing else. For the four barriers inside one
// launch, the cost of one is the difference from a launch with no barrier, divided by the rounds;
// the fifth meets at the end of a kernel, so its cost is a whole launch, one kernel node of a
// CUDA graph of min(rounds, kMaxBarrierGraphNodes) nodes. Before it is timed, each kind runs as
// many rounds checked: every block posts the round, and after the barrier reads every block's post.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace workbook::fused {

struct BarrierCost {
  std::string what;       // "grid.sync() (cooperative_groups)", ...
  double ns = 0.0;        // per barrier; not set when skipped
  std::string skipped;    // why this GPU cannot run it (empty when measured)
  bool checked = false;   // run with every round posted and verified before it was timed
  unsigned mismatches = 0;  // slots that did not hold their round after the barrier (0: it works)
};

struct BarrierCosts {
  int blocks = 0;
  int cluster_blocks = 0;         // the hierarchical barrier's cluster size (0: not run)
  std::vector<BarrierCost> kinds;  // in the order of barrier.cu: grid.sync() first
};

inline constexpr int kMaxBarrierGraphNodes = 500;  // the kernel boundary's graph: min(rounds, this) nodes
BarrierCosts measure_grid_barriers(int blocks, cudaStream_t stream, int rounds = 2000);

}  // namespace workbook::fused

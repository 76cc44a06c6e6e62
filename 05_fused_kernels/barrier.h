// barrier.h: what variant 8's grid-wide barrier costs, measured (fused_kernels_bench --barrier).
//
//   const BarrierCosts c = measure_grid_barriers(gpu.on_chip_capacity().blocks, stream);
//
// Both barriers run in a cooperative launch of `blocks` blocks of kOnChipThreads threads (the
// shape of variant 8), `rounds` barriers in a row and nothing else; the cost of one is the
// difference from a launch with no barrier, divided by the rounds.
#pragma once

#include <cuda_runtime_api.h>

namespace workbook::fused {

struct BarrierCosts {
  int blocks = 0;
  double grid_sync_us = 0.0;  // cooperative_groups::this_grid().sync()
  double counter_us = 0.0;    // a hand-written barrier: one arrival counter, a generation flag
};

BarrierCosts measure_grid_barriers(int blocks, cudaStream_t stream, int rounds = 2000);

}  // namespace workbook::fused

// training_run.h: what a data-parallel run of chapter 06 returns, whichever lesson program trained
// it (multi_gpu.cu, by_hand.cu), and the checks of it: every rank bit-identical, the float64
// reference, the same training on one GPU.
//
//   ParallelRun run = train_data_parallel(problem, {0, 1}, 3);                    // multi_gpu.h
//   regression::Check c = check_against_reference(run, train_reference(data, config));
//   auto one = single_gpu(config, &why_not);   // the whole set on one GPU, no all-reduce
#pragma once

#include "regression_problem.h"
#include "replica.h"
#include "stats.h"
#include "support/nccl_comm.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// --lr if given; otherwise regression::scaled_lr (chapter 05's sweep rule): 0.01 up to 5M points,
// scaled by (5M/N)^2 above, because X = i * 2e-6 grows with N and lr 0.01 diverges above ~10.7M.
double effective_lr(std::optional<double> lr, std::int64_t points);

struct RankResult {
  int rank = 0;
  int device = 0;
  float w = 0.0f, b = 0.0f;
  double test_mse = 0.0;
  Stats training_ms;       // the whole epoch loop, one value per timed run
  double epoch_us = 0.0;   // training_ms.median / epochs
  std::int64_t shard_points = 0;
};

struct ParallelRun {
  std::string mode;               // "dp" or "ddp"
  bool on_chip = false;           // every epoch in one launch, each shard on its GPU's chip (by_hand.cu)
  std::string exchange = "nccl";  // how the sums met: nccl, nccl_symmetric (the bench's), one_shot
  std::string exchange_note;      // how, or why not, in one line (empty for the stock nccl)
  std::vector<RankResult> ranks;
  std::vector<float> losses;      // rank 0's per-epoch training losses
  bool bit_identical() const;     // every rank's w, b and test MSE the same bits as rank 0's
  const RankResult& slowest() const;  // the rank with the longest median epoch loop
};

// One timed rank's figures, from its replica (after its stream is synchronized) and its runs.
RankResult rank_result(int rank, int device, const Replica& replica, const Problem& problem,
                       const std::vector<double>& runs_ms);

// One process per GPU: every rank's figures to every rank, one all-gather of a few doubles each
// (w and b widened exactly, so their bits survive), waited for under `watch`.
std::vector<RankResult> all_gather_results(const RankResult& mine, const Problem& problem, int world, int repeats,
                                           Communicator& comm, cudaStream_t stream, const Watch& watch);

// A run against the float64 reference with 04's tolerances (w, b, every loss, test MSE), or
// against the same training on one GPU (single_gpu), with twice those (float32 on both sides).
regression::Check check_against_reference(const ParallelRun& run, const regression::TrainingResult& reference);
regression::Check check_against_single_gpu(const ParallelRun& run, const regression::TrainingResult& single);

// The whole training set on the current device: one Replica, no all-reduce (the kernels of
// chapter 05's variant 4); nullopt (and the reason) when it does not fit in this GPU's free memory.
std::optional<regression::TrainingResult> single_gpu(const regression::Config& config, std::string* why_not);

}  // namespace workbook::multi_gpu

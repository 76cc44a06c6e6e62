// training.h: chapter 04's regression trained data-parallel, two ways, and how the result is checked.
//
//   Problem p = make_problem(config);                                    // points = the global set
//   ParallelRun dp = train_data_parallel(p, {0, 1, 2, 3}, /*repeats=*/3); // one process, 4 GPUs
//   ParallelRun ddp = train_ddp_rank(p, setup, 3);                        // one process per GPU
//   regression::Check c = check_against_reference(dp, train_reference(data, config));
//
// Both give every rank the same w and b, bit for bit: the three sums of an epoch are all-reduced
// (NCCL hands every rank the same bits), then each rank applies the same float operations.
#pragma once

#include "multi_gpu.cuh"
#include "nccl_comm.h"
#include "regression_problem.h"
#include "stats.h"

#include <nccl.h>

#include <optional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// --lr if given; otherwise regression::scaled_lr (as chapter 05's sweep): 0.01 up to 5M points,
// scaled by (5M/N)^2 above, because X = i * 2e-6 grows with N and lr 0.01 diverges above about 10.7M.
double effective_lr(std::optional<double> lr, std::int64_t points);

// Where an epoch's time goes on one rank: medians over the epochs of the last timed run.
struct EpochTiming {
  Stats training_ms;         // the whole epoch loop, one value per timed run
  double epoch_us = 0.0;     // training_ms.median / epochs
  double compute_us = 0.0;   // fused sums kernel + step kernel
  double allreduce_us = 0.0; // the all-reduce of 3 floats, waiting for the slowest rank included
};

struct RankResult {
  int rank = 0;
  int device = 0;
  float w = 0.0f, b = 0.0f;
  double test_mse = 0.0;
  EpochTiming timing;
  std::int64_t shard_points = 0;
};

struct ParallelRun {
  std::string mode;              // "dp" or "ddp"
  std::vector<RankResult> ranks;
  std::vector<float> losses;     // rank 0's per-epoch training losses
  bool bit_identical() const;    // every rank's w, b and test MSE the same bits as rank 0's
  const RankResult& slowest() const;  // the rank with the longest median epoch loop
};

// The DataParallel analog: one process, one host thread, one Replica per device (a plan per
// device, as cuda-samples' simpleMultiGPU), communicators from ncclCommInitAll, and each epoch
// queued on every device before any is waited for; the three sums all-reduced inside
// ncclGroupStart/End. One untimed run (checked), then `repeats` timed runs.
ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats);

struct DdpSetup {
  int rank = 0;
  int world_size = 1;
  int device = 0;
  ncclUniqueId id{};
  Watch watch;
  int fail_rank = -1;   // --fail-rank: this rank throws at --fail-epoch of its first run
  int fail_epoch = -1;
  bool nonblocking = false;  // --nccl-nonblocking (see Communicator::init_rank)
};

// The DistributedDataParallel analog, run by every rank: the rank's shard, a communicator from
// the unique id, each epoch's all-reduce, bounded waits (see nccl_comm.h).
// At the end every rank's result is all-gathered, so every rank returns the whole ParallelRun.
ParallelRun train_ddp_rank(const Problem& problem, const DdpSetup& setup, int repeats);

// The fault --fail-rank injects; its message names the rank and the epoch.
class InjectedFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run against the float64 reference with 04's tolerances (w, b, every loss, test MSE), or
// against the same training on one GPU (single_gpu). Against one GPU both sides carry float32
// rounding, so the allowance is twice 04's tolerances.
regression::Check check_against_reference(const ParallelRun& run, const regression::TrainingResult& reference);
regression::Check check_against_single_gpu(const ParallelRun& run, const regression::TrainingResult& single);

// The whole training set on the current device: one Replica, no all-reduce (the kernels of
// chapter 05's variant 4); nullopt (and the reason) when it does not fit in this GPU's free memory.
std::optional<regression::TrainingResult> single_gpu(const regression::Config& config, std::string* why_not);

}  // namespace workbook::multi_gpu

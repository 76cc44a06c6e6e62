// multi_gpu.h: chapter 06's training loop run data-parallel two ways, as its bench and tests use
// it: DataParallel (multi_gpu.cu) and DistributedDataParallel (ddp.cu), each over one Replica
// per GPU (replica.h), and the checks of a run.
//
//   Problem p = make_problem(config);                                   // points = the global set
//   ParallelRun dp = train_data_parallel(p, {0, 1, 2, 3}, /*repeats=*/3); // one process, 4 GPUs
//   ParallelRun ddp = train_ddp_rank(p, setup, 3);                       // one process per GPU
//   regression::Check c = check_against_reference(dp, train_reference(data, config));
//
// Host-only declarations with plain types (g++ compiles this header); the kernels live in the .cu.
#pragma once

#include "support/exchange.h"
#include "support/nccl_comm.h"
#include "regression_problem.h"
#include "replica.h"
#include "stats.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

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
  std::string mode;              // "dp" or "ddp"
  bool on_chip = false;          // --on-chip: every epoch in one launch, each shard on its GPU's chip
  std::string exchange = "nccl";  // the exchange that ran (nccl_symmetric may fall back to nccl)
  std::string exchange_note;      // how, or why not, in one line (empty for the stock nccl)
  std::vector<RankResult> ranks;
  std::vector<float> losses;     // rank 0's per-epoch training losses
  bool bit_identical() const;    // every rank's w, b and test MSE the same bits as rank 0's
  const RankResult& slowest() const;  // the rank with the longest median epoch loop
};

// One timed rank's figures, from its replica (after its stream is synchronized) and its runs.
RankResult rank_result(int rank, int device, const Replica& replica, const Problem& problem,
                       const std::vector<double>& runs_ms);

// --exchange (exchange.h), how long a one-shot wait for a peer may last, and --on-chip (on_chip.cu:
// the one-shot exchange inside one launch of every epoch; kind must be kOneShot).
struct ExchangeOptions {
  ExchangeKind kind = ExchangeKind::kNccl;
  double timeout_s = 30.0;
  bool on_chip = false;
};

// DataParallel's all-reduce of the sums: buffers[d] (3 floats on GPU d) becomes the sum over every
// GPU, in place, queued on streams[d] after the work already there, as one NCCL collective over
// comms[d] (from ncclCommInitAll). Only queues; the caller waits on the streams.
void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams);

// The DataParallel analog: one process, one host thread, one Replica per device, communicators
// from ncclCommInitAll. One untimed run, then `repeats` timed runs (each gives the same bits).
ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats,
                                ExchangeOptions exchange = {});

struct DdpSetup {
  int rank = 0;
  int world_size = 1;
  int device = 0;
  ncclUniqueId id{};
  Watch watch;
  bool nonblocking = false;  // ncclConfig_t::blocking = 0 (see Communicator::init_rank)
  ExchangeKind exchange = ExchangeKind::kNccl;  // one_shot waits at most watch.timeout_s
  bool on_chip = false;                          // --on-chip (exchange one_shot)
};

// The DistributedDataParallel analog, run by every rank: the rank's shard, a communicator from
// the unique id, each epoch's all-reduce, bounded waits (nccl_comm.h). At the end every rank's
// result is all-gathered, so every rank returns the whole ParallelRun.
ParallelRun train_ddp_rank(const Problem& problem, const DdpSetup& setup, int repeats);

// A run against the float64 reference with 04's tolerances (w, b, every loss, test MSE), or
// against the same training on one GPU (single_gpu), with twice those (float32 on both sides).
regression::Check check_against_reference(const ParallelRun& run, const regression::TrainingResult& reference);
regression::Check check_against_single_gpu(const ParallelRun& run, const regression::TrainingResult& single);

// The whole training set on the current device: one Replica, no all-reduce (the kernels of
// chapter 05's variant 4); nullopt (and the reason) when it does not fit in this GPU's free memory.
std::optional<regression::TrainingResult> single_gpu(const regression::Config& config, std::string* why_not);

}  // namespace workbook::multi_gpu

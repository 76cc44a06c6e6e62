// multi_gpu.cuh: what chapter 06's lesson (multi_gpu.cu) offers its bench and its tests: one
// GPU's replica, and the training loop run data-parallel two ways.
//
//   Problem p = make_problem(config);                                   // points = the global set
//   ParallelRun dp = train_data_parallel(p, {0, 1, 2, 3}, /*repeats=*/3); // one process, 4 GPUs
//   ParallelRun ddp = train_ddp_rank(p, setup, 3);                       // one process per GPU
//   regression::Check c = check_against_reference(dp, train_reference(data, config));
//
// Host-only declarations with plain types (g++ compiles this header); the kernels live in the .cu.
#pragma once

#include "device_buffer.h"
#include "exchange.h"
#include "gpu_memory.h"
#include "nccl_comm.h"
#include "one_shot_exchange.h"
#include "regression_problem.h"
#include "sharding.h"
#include "stats.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// The training problem every rank agrees on: the regression's Config (points are the global
// data set) with the learning rate actually used.
struct Problem {
  regression::Config config;
  std::int64_t train_points = 0;  // of the whole data set (first 80%)
  std::int64_t test_points = 0;
};
Problem make_problem(const regression::Config& config);

// --lr if given; otherwise regression::scaled_lr (chapter 05's sweep rule): 0.01 up to 5M points,
// scaled by (5M/N)^2 above, because X = i * 2e-6 grows with N and lr 0.01 diverges above ~10.7M.
double effective_lr(std::optional<double> lr, std::int64_t points);

// One GPU's part of data-parallel training: its shard of X and y (made on this GPU from the
// global indices, the same bits as the whole set's), w and b, and the three sums of an epoch.
// Every method only queues work on `stream`; the caller synchronizes.
class Replica {
 public:
  // Allocates on the current device and makes the shard's data. With noise, the whole noise
  // vector is drawn (cuRAND, as chapter 04) and the shard's slice used.
  Replica(const Problem& problem, Shard train, Shard test, cudaStream_t stream);
  // What that constructor allocates on the current device (ask require_gpu_memory before it).
  static ByteCount bytes_needed(const Problem& problem, Shard train, Shard test);

  void enqueue_reset();          // w = 0.83, b = 0.7645, for a new run
  void enqueue_sums();           // sums() = {sum r^2, sum r x, sum r} over the training shard
  float* sums() { return exchange_sums_ != nullptr ? exchange_sums_ : sums_.data(); }  // the all-reduce buffer
  void enqueue_step(int epoch);  // losses[epoch] = sums[0] / n; w, b -= lr * 2/n * sums[1], sums[2]
  // --exchange nccl_symmetric: the sums go to (and the step reads them from) `window`, 3 floats
  // of a registered symmetric window on this device, instead of this replica's own buffer.
  void use_sums_buffer(float* window) { exchange_sums_ = window; }
  // --exchange one_shot: enqueue_sums's last block also publishes the sums to every rank's
  // mailbox, and enqueue_step first waits for every rank's slot and steps on their sum.
  void use_one_shot(OneShotMailbox* mailbox) { one_shot_ = mailbox; }
  void enqueue_test_sums();      // test_sums() = {sum r^2 over the test shard, 0, 0}
  float* test_sums() { return test_sums_.data(); }

  // After the stream is synchronized: w, b, the losses of `epochs` epochs, the (reduced) test sums.
  struct Result {
    float w = 0.0f, b = 0.0f;
    float test_sum = 0.0f;
    std::vector<float> losses;
  };
  Result read(int epochs) const;
  Shard train_shard() const { return train_; }

 private:
  Problem problem_;
  Shard train_, test_;
  cudaStream_t stream_;
  int blocks_ = 1, test_blocks_ = 1;
  DeviceBuffer<float> x_, y_, test_x_, test_y_, partials_, sums_, test_sums_, params_, losses_;
  DeviceBuffer<unsigned> done_count_;
  float* exchange_sums_ = nullptr;
  OneShotMailbox* one_shot_ = nullptr;
};

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
  std::string exchange = "nccl";  // the exchange that ran (nccl_symmetric may fall back to nccl)
  std::string exchange_note;      // how, or why not, in one line (empty for the stock nccl)
  std::vector<RankResult> ranks;
  std::vector<float> losses;     // rank 0's per-epoch training losses
  bool bit_identical() const;    // every rank's w, b and test MSE the same bits as rank 0's
  const RankResult& slowest() const;  // the rank with the longest median epoch loop
};

// --exchange (exchange.h), and how long a one-shot wait for a peer may last.
struct ExchangeOptions {
  ExchangeKind kind = ExchangeKind::kNccl;
  double timeout_s = 30.0;
};

// The DataParallel analog: one process, one host thread, one Replica per device, communicators
// from ncclCommInitAll. One untimed run (checked), then `repeats` timed runs.
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

// replica.h: what one GPU holds and does in chapter 06's data-parallel training (replica.cu).
//
//   Replica replica(problem, shard_of(train_points, ranks, rank), test_shard, stream);
//   replica.enqueue_sums();        // sums() = this shard's {sum r^2, sum r x, sum r}
//   ... all-reduce sums() over the GPUs ...
//   replica.enqueue_step(epoch);   // w, b -= lr * gradient of the whole set: the same bits everywhere
//   replica.enqueue_epoch_one_shot(epoch);   // --exchange one_shot: all three in one kernel
//   replica.enqueue_all_epochs_on_chip();    // --on-chip: every epoch in one launch (on_chip.cu)
//
// Host-only declarations (g++ compiles this header); the kernels live in replica.cu.
#pragma once

#include "device_buffer.h"
#include "gpu_memory.h"
#include "support/sharding.h"
#include "on_chip_room.h"
#include "regression_problem.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace workbook::multi_gpu {

class OneShotMailbox;  // one_shot_exchange.h

// The training problem every rank agrees on: the regression's Config (points are the global
// data set) with the learning rate actually used.
struct Problem {
  regression::Config config;
  std::int64_t train_points = 0;  // of the whole data set (first 80%)
  std::int64_t test_points = 0;
};
Problem make_problem(const regression::Config& config);

// The CPU twin of one epoch's sums over points [first, first + count) of the data set, in double:
// {sum r^2, sum r x, sum r} with r = w x + b - y. The replica's float sums match it within
// 04's tolerance (tests/test_06_multi_gpu.cpp).
struct ShardSums {
  double rr = 0.0, rx = 0.0, r = 0.0;
};
ShardSums shard_sums_cpu(const regression::Dataset& data, Shard shard, double w, double b);

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
  // --exchange one_shot: the epoch is one kernel, whose last block publishes the shard's sums to
  // every rank's mailbox, waits for every rank's slot, and steps on their sum in rank order.
  void use_one_shot(const OneShotMailbox* mailbox) { one_shot_ = mailbox; }
  void enqueue_epoch_one_shot(int epoch);
  // --on-chip (on_chip.cu): every epoch in one cooperative launch that keeps the shard in this
  // GPU's registers and shared memory, the sums meeting through `mailbox` inside the kernel.
  // Throws OnChipDoesNotFit when the shard is larger than this GPU's room.
  void use_on_chip(const OneShotMailbox* mailbox);
  void enqueue_all_epochs_on_chip();
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
  struct Step {
    float lr, inv_n, two_inv_n;
  };
  Step step_constants() const;

  Problem problem_;
  Shard train_, test_;
  cudaStream_t stream_;
  int blocks_ = 1, test_blocks_ = 1;
  DeviceBuffer<float> x_, y_, test_x_, test_y_, partials_, sums_, test_sums_, params_, losses_;
  DeviceBuffer<unsigned> done_count_;
  float* exchange_sums_ = nullptr;
  const OneShotMailbox* one_shot_ = nullptr;
  fused::OnChipRoom on_chip_room_;        // --on-chip: this GPU's room
  DeviceBuffer<float> on_chip_partials_;  // --on-chip: 2 epochs x (3 sums + a flag) x its blocks
};

// The room of the on-chip kernel on the current GPU (common/on_chip_room.h): how many training
// points each GPU can keep on chip for all epochs, computed from the GPU's properties.
fused::OnChipRoom on_chip_room();

// A shard larger than its GPU's room: "GPU 1's shard does not fit on chip: 38.4 MB needed, 48.0
// MB available". The bench skips such a size; the program stops with the line.
class OnChipDoesNotFit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace workbook::multi_gpu

// replica.h: what one GPU holds and does in chapter 06's data-parallel training (replica.cu).
//
//   Replica replica(problem, shard_of(train_points, ranks, rank), test_shard, stream);
//   replica.enqueue_sums();        // sums() = this shard's {sum r^2, sum r x, sum r}
//   ... all-reduce sums() over the GPUs ...
//   replica.enqueue_step(epoch);   // w, b -= lr * gradient of the whole set: the same bits everywhere
//   enqueue_epoch_one_shot(replica.view(), mailbox, epoch);   // by_hand.h: all three in one kernel
//
// Host-only declarations (g++ compiles this header); the kernels live in replica.cu.
#pragma once

#include "device_buffer.h"
#include "gpu_memory.h"
#include "regression_problem.h"
#include "support/sharding.h"

#include <cuda_runtime_api.h>

#include <cstdint>
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

// Shard `index` of `count` of the problem's training points, and of its test points (which follow
// the training points in the data set).
Shard train_shard_of(const Problem& problem, int count, int index);
Shard test_shard_of(const Problem& problem, int count, int index);
// Asks the current device for the memory of shard `index` of `count` before anything is
// allocated: one line naming the flag and `whose` ("GPU 1's") when it does not fit.
void require_shard_fits(const Problem& problem, int count, int index, const std::string& whose);

// The CPU twin of one epoch's sums over points [first, first + count) of the data set, in double:
// {sum r^2, sum r x, sum r} with r = w x + b - y. The replica's float sums match it within
// 04's tolerance (tests/test_06_multi_gpu.cpp).
struct ShardSums {
  double rr = 0.0, rx = 0.0, r = 0.0;
};
ShardSums shard_sums_cpu(const regression::Dataset& data, Shard shard, double w, double b);

// The shard, the parameters and the step's constants, for a kernel: what Replica::view() gives.
struct ReplicaView {
  const float* x = nullptr;
  const float* y = nullptr;
  std::int64_t n = 0;        // training points of the shard
  float* params = nullptr;   // w, b
  float* partials = nullptr;
  unsigned* done_count = nullptr;
  float* losses = nullptr;
  float lr = 0.0f, inv_n = 0.0f, two_inv_n = 0.0f;  // of the whole training set
  int blocks = 1;            // of the fused pass
  int epochs = 0;
  cudaStream_t stream = nullptr;
};

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
  // The all-reduce's buffer elsewhere: 3 floats on this device (the bench's nccl_symmetric puts
  // them in a window NCCL registered for its symmetric kernels).
  void use_sums_buffer(float* buffer) { exchange_sums_ = buffer; }
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
  ReplicaView view();  // for a kernel: replica.cu's step, by_hand's epoch (one_shot_exchange.cu, on_chip.cu)

 private:
  Problem problem_;
  Shard train_, test_;
  cudaStream_t stream_;
  int blocks_ = 1, test_blocks_ = 1;
  DeviceBuffer<float> x_, y_, test_x_, test_y_, partials_, sums_, test_sums_, params_, losses_;
  DeviceBuffer<unsigned> done_count_;
  float* exchange_sums_ = nullptr;
};

}  // namespace workbook::multi_gpu

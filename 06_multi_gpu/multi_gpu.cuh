// multi_gpu.cuh: what one GPU does in data-parallel training, and the kernels of the benchmarks.
//
//   workbook::Stream stream;                                     // on the replica's device
//   workbook::multi_gpu::Replica replica(problem, train_shard, test_shard, stream.get());
//   replica.enqueue_sums();                  // chapter 05's fused pass over this shard: 3 sums
//   ncclAllReduce(replica.sums(), replica.sums(), 3, ncclFloat, ncclSum, comm, stream.get());
//   replica.enqueue_step(epoch);             // every replica applies the same step
//
// Host-only declarations with plain types (g++ compiles this header); the kernels live in the .cu.
#pragma once

#include "device_buffer.h"
#include "gpu_memory.h"
#include "plan.h"
#include "regression_problem.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace workbook::multi_gpu {

// The training problem every rank agrees on: chapter 04's Config (points are the global dataset),
// and the learning rate actually used (see effective_lr in training.h).
struct Problem {
  regression::Config config;
  std::int64_t train_points = 0;  // of the whole dataset (first 80%)
  std::int64_t test_points = 0;
};
Problem make_problem(const regression::Config& config);

// One GPU's part of data-parallel training: its shard of X and y (made on this GPU from the
// global indices, bit-identical to chapter 04's data for those points), w and b, and the three
// sums of an epoch. Every method only queues work on `stream`; the caller synchronizes.
class Replica {
 public:
  // Allocates on the current device and makes the shard's data. With noise, the whole noise
  // vector is drawn (cuRAND, as chapter 04) and the shard's slice used, so the data match 04's.
  Replica(const Problem& problem, Shard train, Shard test, cudaStream_t stream);

  // What that constructor allocates on the current device (ask require_gpu_memory before it).
  static ByteCount bytes_needed(const Problem& problem, Shard train, Shard test);

  void enqueue_reset();         // w = 0.83, b = 0.7645, for a new run
  void enqueue_sums();          // sums() = {sum r^2, sum r x, sum r} over the training shard
  float* sums() { return sums_.data(); }  // 3 floats on this device: the all-reduce buffer
  void enqueue_step(int epoch);  // losses[epoch] = sums[0] / n; w, b -= lr * 2/n * sums[1], sums[2]
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
  int sum_blocks() const { return blocks_; }

 private:
  Problem problem_;
  Shard train_, test_;
  cudaStream_t stream_;
  int blocks_ = 1, test_blocks_ = 1;
  DeviceBuffer<float> x_, y_, test_x_, test_y_, partials_, sums_, test_sums_, params_, losses_;
  DeviceBuffer<unsigned> done_count_;
};

// The all-reduce benchmark's data. Element i of rank r is (i % 7) + 1 + r: small integers, so
// the sum over n ranks, n (i % 7 + 1) + n (n - 1) / 2, is exact in float whatever the order.
void launch_fill_allreduce_input(float* data, std::size_t count, int rank, cudaStream_t stream);
// Adds to *wrong (device) the number of elements that differ from that sum.
void launch_count_wrong(const float* data, std::size_t count, int ranks, unsigned long long* wrong,
                        cudaStream_t stream);

// Holds `stream` until the host raises release[0] to at least `ticket`, or for timeout_ms at most,
// in which case it writes `ticket` to release[1]. `release` is two unsigneds of pinned host memory
// (cudaMallocHost: with unified addressing the GPU reads and writes it by the same pointer). Work
// queued behind the latch then starts back to back, however slowly the host issued it: what a
// latency measurement needs when one call costs the host as long as one copy.
void launch_latch(unsigned* release, unsigned ticket, double timeout_ms, cudaStream_t stream);

}  // namespace workbook::multi_gpu

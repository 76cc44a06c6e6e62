// replica.cu: what one GPU does in chapter 06's data-parallel training: its shard of the data,
// the three sums of an epoch over that shard, and the SGD step once every shard's sums are added.
//
// The per-GPU pass is common/fused_sums.cuh (chapter 05's variant 4): one pass over the shard's X
// and y, a fixed-shape tree per block, and the last block to finish adds the block partials in
// block order. Unlike 05's kernel it stops at the three sums: the step needs every shard's sums,
// so the all-reduce (multi_gpu.cu, ddp.cu) goes in between, or an exchange by hand inside one
// kernel (by_hand.cu). Its CPU twin, shard_sums_cpu, is the
// first function below.
#include "replica.h"

#include "cuda_check.h"
#include "nvtx.h"
#include "replica.cuh"
#include "regression_data.h"

#include <algorithm>

namespace workbook::multi_gpu {

ShardSums shard_sums_cpu(const regression::Dataset& data, Shard shard, double w, double b) {
  ShardSums s;
  for (std::int64_t i = shard.start; i < shard.start + shard.count; ++i) {
    const double x = data.x[static_cast<std::size_t>(i)];
    const double r = w * x + b - data.y[static_cast<std::size_t>(i)];
    s.rr += r * r;
    s.rx += r * x;
    s.r += r;
  }
  return s;
}

namespace {

using fused::fused_blocks;
using fused::kThreads;
using fused::Sums;

// The shard's sums into sums[0..2], for an all-reduce to add across the GPUs.
__global__ void __launch_bounds__(kThreads)
    shard_sums_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n, const float* params,
                      float* partials, unsigned* done_count, float* sums) {
  Sums total;
  if (!shard_sums(x, y, n, params, partials, done_count, total) || threadIdx.x != 0) return;
  sums[0] = total.rr;
  sums[1] = total.rx;
  sums[2] = total.r;
}

__global__ void step_kernel(const float* all_reduced, float* params, float* losses, int epoch, float lr, float inv_n,
                            float two_inv_n) {
  const float sums[3] = {all_reduced[0], all_reduced[1], all_reduced[2]};
  sgd_step(sums, params, losses, epoch, lr, inv_n, two_inv_n);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// One GPU's replica.

Problem make_problem(const regression::Config& config) {
  regression::validate(config);
  Problem p;
  p.config = config;
  const regression::Split split = regression::split_of(config.points);
  p.train_points = split.train;
  p.test_points = split.test;
  return p;
}

Shard train_shard_of(const Problem& problem, int count, int index) {
  return shard_of(problem.train_points, count, index);
}

Shard test_shard_of(const Problem& problem, int count, int index) {
  return shard_of(problem.test_points, count, index, problem.train_points);
}

void require_shard_fits(const Problem& problem, int count, int index, const std::string& whose) {
  require_gpu_memory("--points " + std::to_string(problem.config.points) + " (" + whose + " shard of " +
                         std::to_string(count) + ")",
                     Replica::bytes_needed(problem, train_shard_of(problem, count, index),
                                           test_shard_of(problem, count, index)));
}

ByteCount Replica::bytes_needed(const Problem& problem, Shard train, Shard test) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int multiprocessors = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const int blocks = std::max(fused_blocks(train.count, multiprocessors), fused_blocks(test.count, multiprocessors));
  ByteCount need;
  need.add(std::max<std::int64_t>(train.count, 1), sizeof(float), 2);  // x, y
  need.add(std::max<std::int64_t>(test.count, 1), sizeof(float), 2);   // test x, y
  need.add(3 * static_cast<std::int64_t>(blocks) + 3 + 3 + 2, sizeof(float));  // partials, sums, params
  need.add(problem.config.epochs, sizeof(float));                        // losses
  need.add(1, sizeof(unsigned));                                         // done count
  const std::int64_t points = problem.config.points;
  if (problem.config.noise > 0.0) need.add(regression::noise_count(points), sizeof(float));  // the whole noise
  return need;
}

Replica::Replica(const Problem& problem, Shard train, Shard test, cudaStream_t stream)
    : problem_(problem), train_(train), test_(test), stream_(stream) {
  NvtxRange range("make shard");
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int multiprocessors = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  blocks_ = fused_blocks(train.count, multiprocessors);
  test_blocks_ = fused_blocks(test.count, multiprocessors);
  // A buffer of each shard (never a pointer into a bigger one): 16-byte aligned for float4 loads.
  x_ = DeviceBuffer<float>(std::max<std::int64_t>(train.count, 1));
  y_ = DeviceBuffer<float>(std::max<std::int64_t>(train.count, 1));
  test_x_ = DeviceBuffer<float>(std::max<std::int64_t>(test.count, 1));
  test_y_ = DeviceBuffer<float>(std::max<std::int64_t>(test.count, 1));
  partials_ = DeviceBuffer<float>(3 * static_cast<std::size_t>(std::max(blocks_, test_blocks_)));
  sums_ = DeviceBuffer<float>(3);
  test_sums_ = DeviceBuffer<float>(3);
  params_ = DeviceBuffer<float>(2);
  losses_ = DeviceBuffer<float>(problem.config.epochs);
  done_count_ = DeviceBuffer<unsigned>(1);
  CUDA_CHECK(cudaMemsetAsync(done_count_.data(), 0, done_count_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(sums_.data(), 0, sums_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(test_sums_.data(), 0, test_sums_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(losses_.data(), 0, losses_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(x_.data(), 0, x_.bytes(), stream_));  // empty shards stay initialised
  CUDA_CHECK(cudaMemsetAsync(y_.data(), 0, y_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(test_x_.data(), 0, test_x_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(test_y_.data(), 0, test_y_.bytes(), stream_));

  // The shard's points of the whole data set, bit for bit (the noise is drawn for every point).
  const DeviceBuffer<float> noise = regression::make_noise_on_gpu(problem.config, stream_);
  regression::launch_make_data(x_.data(), y_.data(), noise.data(), problem.config.noise, train.start, train.count, stream_);
  regression::launch_make_data(test_x_.data(), test_y_.data(), noise.data(), problem.config.noise, test.start, test.count,
                               stream_);
  enqueue_reset();
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // the noise buffer is freed next
}

void Replica::enqueue_reset() {
  regression::launch_reset_params(params_.data(), stream_);
}

void Replica::enqueue_sums() {
  shard_sums_kernel<<<blocks_, kThreads, 0, stream_>>>(x_.data(), y_.data(), train_.count, params_.data(),
                                                       partials_.data(), done_count_.data(), sums());
  CUDA_CHECK_LAUNCH();
}

void Replica::enqueue_step(int epoch) {
  const ReplicaView k = view();
  step_kernel<<<1, 1, 0, stream_>>>(sums(), params_.data(), losses_.data(), epoch, k.lr, k.inv_n, k.two_inv_n);
  CUDA_CHECK_LAUNCH();
}

ReplicaView Replica::view() {
  const std::int64_t n = problem_.train_points;  // of the whole set: every replica steps on the global mean
  return ReplicaView{x_.data(), y_.data(), train_.count, params_.data(), partials_.data(), done_count_.data(),
                     losses_.data(), static_cast<float>(problem_.config.lr), static_cast<float>(1.0 / n),
                     static_cast<float>(2.0 / n), blocks_, problem_.config.epochs, stream_};
}

void Replica::enqueue_test_sums() {
  shard_sums_kernel<<<test_blocks_, kThreads, 0, stream_>>>(test_x_.data(), test_y_.data(), test_.count,
                                                            params_.data(), partials_.data(), done_count_.data(),
                                                            test_sums_.data());
  CUDA_CHECK_LAUNCH();
}

Replica::Result Replica::read(int epochs) const {
  Result r;
  float params[2] = {0.0f, 0.0f};
  float test[3] = {0.0f, 0.0f, 0.0f};
  r.losses.resize(static_cast<std::size_t>(epochs));
  CUDA_CHECK(cudaMemcpy(params, params_.data(), sizeof params, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(test, test_sums_.data(), sizeof test, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(r.losses.data(), losses_.data(), r.losses.size() * sizeof(float), cudaMemcpyDeviceToHost));
  r.w = params[0];
  r.b = params[1];
  r.test_sum = test[0];
  return r;
}

}  // namespace workbook::multi_gpu

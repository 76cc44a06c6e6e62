// training_run.cpp: a run's figures, gathered and checked (training_run.h).
#include "support/training_run.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "nvtx.h"
#include "stream.h"

#include <nccl.h>

#include <algorithm>

namespace workbook::multi_gpu {

RankResult rank_result(int rank, int device, const Replica& replica, const Problem& problem,
                       const std::vector<double>& runs_ms) {
  const Replica::Result r = replica.read(problem.config.epochs);
  RankResult out;
  out.rank = rank;
  out.device = device;
  out.w = r.w;
  out.b = r.b;
  out.test_mse = r.test_sum * static_cast<float>(1.0 / problem.test_points);
  out.shard_points = replica.train_shard().count;
  out.training_ms = summarize(runs_ms);
  out.epoch_us = 1e3 * out.training_ms.median / problem.config.epochs;
  return out;
}

bool ParallelRun::bit_identical() const {
  for (const RankResult& r : ranks) {
    if (r.w != ranks.front().w || r.b != ranks.front().b || r.test_mse != ranks.front().test_mse) return false;
  }
  return true;
}

const RankResult& ParallelRun::slowest() const {
  return *std::max_element(ranks.begin(), ranks.end(), [](const RankResult& a, const RankResult& b) {
    return a.training_ms.median < b.training_ms.median;
  });
}

double effective_lr(std::optional<double> lr, std::int64_t points) {
  return lr ? *lr : regression::scaled_lr(regression::Config{}.lr, points);
}


// Pinned host memory: a copy from pageable memory would block the host outside the watch.
std::vector<RankResult> all_gather_results(const RankResult& mine, const Problem& problem, int world, int repeats,
                                           Communicator& comm, cudaStream_t stream, const Watch& watch) {
  constexpr int kFields = 8;
  PinnedBuffer<double> host_fields(kFields), all(static_cast<std::size_t>(kFields) * world);
  const double fields[kFields] = {static_cast<double>(mine.rank), static_cast<double>(mine.device), mine.w, mine.b,
                                  mine.test_mse, mine.training_ms.median, mine.training_ms.min, mine.training_ms.max};
  std::copy(fields, fields + kFields, host_fields.data());
  DeviceBuffer<double> send(kFields), gathered(all.size());
  CUDA_CHECK(cudaMemcpyAsync(send.data(), host_fields.data(), send.bytes(), cudaMemcpyHostToDevice, stream));
  comm.call(ncclAllGather(send.data(), gathered.data(), kFields, ncclFloat64, comm.get(), stream), "result all-gather",
            watch);
  CUDA_CHECK(cudaMemcpyAsync(all.data(), gathered.data(), gathered.bytes(), cudaMemcpyDeviceToHost, stream));
  Event done;
  done.record(stream);
  comm.wait_event(done.get(), "the result all-gather", watch);
  std::vector<RankResult> ranks;
  for (int k = 0; k < world; ++k) {
    const double* f = all.data() + static_cast<std::size_t>(k) * kFields;
    RankResult r;
    r.rank = static_cast<int>(f[0]);
    r.device = static_cast<int>(f[1]);
    r.w = static_cast<float>(f[2]);
    r.b = static_cast<float>(f[3]);
    r.test_mse = f[4];
    r.training_ms.median = f[5];
    r.training_ms.min = f[6];
    r.training_ms.max = f[7];
    r.training_ms.count = static_cast<std::size_t>(repeats);
    r.epoch_us = 1e3 * f[5] / problem.config.epochs;
    r.shard_points = shard_of(problem.train_points, world, k).count;
    ranks.push_back(r);
  }
  return ranks;
}

namespace {

// rank 0's w, b and test MSE, and the losses every rank shares, as a TrainingResult.
regression::TrainingResult as_result(const ParallelRun& run) {
  regression::TrainingResult r;
  r.w = run.ranks.front().w;
  r.b = run.ranks.front().b;
  r.test_mse = run.ranks.front().test_mse;
  r.losses.assign(run.losses.begin(), run.losses.end());
  r.diverged_at = regression::first_divergent(r.losses);
  if (r.diverged_at) r.losses.resize(static_cast<std::size_t>(*r.diverged_at) + 1);
  return r;
}

}  // namespace

regression::Check check_against_reference(const ParallelRun& run, const regression::TrainingResult& want) {
  return regression::check_against(as_result(run), want);
}

regression::Check check_against_single_gpu(const ParallelRun& run, const regression::TrainingResult& single) {
  const Tolerance parameters{0.0, 2 * regression::kParameterTolerance.rel};
  const Tolerance losses{0.0, 2 * regression::kLossTolerance.rel};
  return regression::check_against(as_result(run), single, parameters, losses, "the single-GPU run");
}

std::optional<regression::TrainingResult> single_gpu(const regression::Config& config, std::string* why_not) {
  NvtxRange range("single GPU");
  const Problem problem = make_problem(config);
  const Shard train{0, problem.train_points}, test{problem.train_points, problem.test_points};
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const ByteCount need = Replica::bytes_needed(problem, train, test);
  if (need.saturated() || need.bytes() > free_bytes * 9 / 10) {
    if (why_not != nullptr) {
      *why_not = "one GPU would need " + std::to_string(need.bytes() >> 20) + " MiB, " +
                 std::to_string(free_bytes >> 20) + " MiB free";
    }
    return std::nullopt;
  }
  Stream stream;
  Replica replica(problem, train, test, stream.get());
  for (int e = 0; e < config.epochs; ++e) {
    replica.enqueue_sums();  // the sums of the whole set: nothing to all-reduce
    replica.enqueue_step(e);
  }
  replica.enqueue_test_sums();
  stream.synchronize();
  const Replica::Result r = replica.read(config.epochs);
  ParallelRun run;
  run.ranks.push_back(RankResult{});
  run.ranks.front().w = r.w;
  run.ranks.front().b = r.b;
  run.ranks.front().test_mse = r.test_sum * static_cast<float>(1.0 / problem.test_points);
  run.losses = r.losses;
  return as_result(run);
}

}  // namespace workbook::multi_gpu

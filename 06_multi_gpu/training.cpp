// training.cpp: the DataParallel and DistributedDataParallel analogs, and their checks.
#include "training.h"

#include "cuda_check.h"
#include "nvtx.h"
#include "stream.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace workbook::multi_gpu {
namespace {

// How many epochs the host may run ahead of the GPU in the DDP loop before it waits (polling):
// enough that the GPU never starves, few enough that a hang is seen within an epoch or two, and
// so few collectives in flight that a blocking ncclAllReduce never waits for room in NCCL's queue.
constexpr int kEpochsInFlight = 4;

// Events around the three phases of every epoch, on one device. Only the first (checked) run
// records them: the timed repeats bracket the whole run with `start` and `stop` (DDP adds one
// progress event per epoch, without timing, for the host's pacing), so the time per epoch does not
// carry the cost of four timing events per epoch.
struct EpochMarks {
  std::vector<Event> before_sums, after_sums, after_allreduce, after_step;
  Event start{EventTiming::kEnabled}, stop{EventTiming::kEnabled};
  explicit EpochMarks(int epochs) {
    for (int e = 0; e < epochs; ++e) {
      before_sums.emplace_back(EventTiming::kEnabled);
      after_sums.emplace_back(EventTiming::kEnabled);
      after_allreduce.emplace_back(EventTiming::kEnabled);
      after_step.emplace_back(EventTiming::kEnabled);
    }
  }
  // Per-epoch medians (microseconds) of compute (sums + step) and all-reduce, of the marked run.
  void summarize(EpochTiming& t) const {
    std::vector<double> compute, allreduce;
    for (std::size_t e = 0; e < before_sums.size(); ++e) {
      compute.push_back(1e3 * (elapsed_ms(before_sums[e], after_sums[e]) + elapsed_ms(after_allreduce[e], after_step[e])));
      allreduce.push_back(1e3 * elapsed_ms(after_sums[e], after_allreduce[e]));
    }
    t.compute_us = summarize_samples(compute);
    t.allreduce_us = summarize_samples(allreduce);
  }
  static double summarize_samples(std::vector<double> v) { return workbook::summarize(std::move(v)).median; }
};

void finish_timing(EpochTiming& t, std::vector<double> runs_ms, int epochs) {
  t.training_ms = summarize(std::move(runs_ms));
  t.epoch_us = 1e3 * t.training_ms.median / epochs;
}

}  // namespace

double effective_lr(std::optional<double> lr, std::int64_t points) {
  return lr ? *lr : regression::scaled_lr(regression::Config{}.lr, points);
}

bool ParallelRun::bit_identical() const {
  for (const RankResult& r : ranks) {
    if (r.w != ranks.front().w || r.b != ranks.front().b || r.test_mse != ranks.front().test_mse) return false;
  }
  return true;
}

const RankResult& ParallelRun::slowest() const {
  return *std::max_element(ranks.begin(), ranks.end(), [](const RankResult& a, const RankResult& b) {
    return a.timing.training_ms.median < b.timing.training_ms.median;
  });
}

ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats) {
  NvtxRange range("data parallel");
  const int count = static_cast<int>(devices.size());
  const int epochs = problem.config.epochs;
  // The plan of each device: its stream, replica and events, all made with that device current.
  struct Plan {
    int device = 0;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Replica> replica;
    std::unique_ptr<EpochMarks> marks;
    std::vector<double> runs_ms;
  };
  // Every device's shard is asked for before any is allocated: a size that does not fit is one line.
  for (int d = 0; d < count; ++d) {
    CUDA_CHECK(cudaSetDevice(devices[d]));
    require_gpu_memory("--points " + std::to_string(problem.config.points) + " (GPU " + std::to_string(devices[d]) +
                           "'s shard of " + std::to_string(count) + ")",
                       Replica::bytes_needed(problem, shard_of(problem.train_points, count, d),
                                             shard_of(problem.test_points, count, d, problem.train_points)));
  }
  std::vector<Plan> plans(devices.size());
  for (int d = 0; d < count; ++d) {
    Plan& p = plans[d];
    p.device = devices[d];
    CUDA_CHECK(cudaSetDevice(p.device));
    p.stream = std::make_unique<Stream>();
    p.replica = std::make_unique<Replica>(problem, shard_of(problem.train_points, count, d),
                                          shard_of(problem.test_points, count, d, problem.train_points),
                                          p.stream->get());
    p.marks = std::make_unique<EpochMarks>(epochs);
  }
  // One communicator per device, all made by this thread in one call (blocking ones: this thread
  // issues every device's part of each collective inside one group, so nothing waits on another
  // process). An exception from here on aborts them (see CommunicatorGroup).
  CommunicatorGroup comms = CommunicatorGroup::init_all(devices);

  auto set = [&](const Plan& p) { CUDA_CHECK(cudaSetDevice(p.device)); };
  auto all_reduce = [&](auto buffer_of) {
    NCCL_CHECK(ncclGroupStart());  // one collective across the devices of this thread
    for (int d = 0; d < count; ++d) {
      float* buffer = buffer_of(*plans[d].replica);
      NCCL_CHECK(ncclAllReduce(buffer, buffer, 3, ncclFloat, ncclSum, comms.get(static_cast<std::size_t>(d)),
                               plans[d].stream->get()));
    }
    NCCL_CHECK(ncclGroupEnd());
  };
  // One run: every epoch queued on every device; the host waits only at the end.
  auto run = [&](bool marked) {
    for (Plan& p : plans) {
      set(p);
      p.replica->enqueue_reset();
      p.marks->start.record(p.stream->get());
    }
    for (int e = 0; e < epochs; ++e) {
      for (Plan& p : plans) {
        set(p);
        if (marked) p.marks->before_sums[e].record(p.stream->get());
        p.replica->enqueue_sums();
        if (marked) p.marks->after_sums[e].record(p.stream->get());
      }
      all_reduce([](Replica& r) { return r.sums(); });
      for (Plan& p : plans) {
        set(p);
        if (marked) p.marks->after_allreduce[e].record(p.stream->get());
        p.replica->enqueue_step(e);
        if (marked) p.marks->after_step[e].record(p.stream->get());
      }
    }
    for (Plan& p : plans) {
      set(p);
      p.marks->stop.record(p.stream->get());
    }
    for (Plan& p : plans) {
      set(p);
      p.stream->synchronize();
      p.runs_ms.push_back(elapsed_ms(p.marks->start, p.marks->stop));
    }
  };
  run(true);  // the checked run, also the warm-up; the per-epoch split comes from it
  for (Plan& p : plans) p.runs_ms.clear();
  for (int i = 0; i < repeats; ++i) run(false);

  // The test loss: each device's test shard, all-reduced like the gradient sums.
  for (Plan& p : plans) {
    set(p);
    p.replica->enqueue_test_sums();
  }
  all_reduce([](Replica& r) { return r.test_sums(); });
  ParallelRun out;
  out.mode = "dp";
  for (int d = 0; d < count; ++d) {
    Plan& p = plans[d];
    set(p);
    p.stream->synchronize();
    const Replica::Result r = p.replica->read(epochs);
    RankResult rr;
    rr.rank = d;
    rr.device = p.device;
    rr.w = r.w;
    rr.b = r.b;
    rr.test_mse = r.test_sum * static_cast<float>(1.0 / problem.test_points);
    rr.shard_points = p.replica->train_shard().count;
    finish_timing(rr.timing, p.runs_ms, epochs);
    p.marks->summarize(rr.timing);
    out.ranks.push_back(rr);
    if (d == 0) out.losses = r.losses;
  }
  comms.finalize();  // every stream synchronized above: grouped finalize, then destroy
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return out;
}

ParallelRun train_ddp_rank(const Problem& problem, const DdpSetup& s, int repeats) {
  NvtxRange range("distributed data parallel");
  const int epochs = problem.config.epochs;
  const Watch& watch = s.watch;
  CUDA_CHECK(cudaSetDevice(s.device));
  Stream stream;
  const Shard train = shard_of(problem.train_points, s.world_size, s.rank);
  const Shard test = shard_of(problem.test_points, s.world_size, s.rank, problem.train_points);
  require_gpu_memory("--points " + std::to_string(problem.config.points) + " (rank " + std::to_string(s.rank) +
                         "'s shard of " + std::to_string(s.world_size) + ")",
                     Replica::bytes_needed(problem, train, test));
  Replica replica(problem, train, test, stream.get());
  EpochMarks marks(epochs);
  std::vector<Event> progress(static_cast<std::size_t>(epochs));  // the host's pacing marks, no timing
  Communicator comm = Communicator::init_rank(s.id, s.world_size, s.rank, watch, s.nonblocking);
  const cudaStream_t st = stream.get();

  auto run = [&](bool first) {
    replica.enqueue_reset();
    marks.start.record(st);
    for (int e = 0; e < epochs; ++e) {
      if (first && s.rank == s.fail_rank && e == s.fail_epoch) {
        throw InjectedFault(watch.who + ": injected fault at epoch " + std::to_string(e) + " (--fail-rank " +
                            std::to_string(s.fail_rank) + " --fail-epoch " + std::to_string(s.fail_epoch) +
                            "): leaving without joining the all-reduce");
      }
      if (first) marks.before_sums[e].record(st);
      replica.enqueue_sums();
      if (first) marks.after_sums[e].record(st);
      comm.call(ncclAllReduce(replica.sums(), replica.sums(), 3, ncclFloat, ncclSum, comm.get(), st), "all-reduce",
                watch);
      if (first) marks.after_allreduce[e].record(st);
      replica.enqueue_step(e);
      if (first) marks.after_step[e].record(st);
      progress[e].record(st);
      // Stay at most kEpochsInFlight epochs ahead of the GPU, and notice a stuck all-reduce.
      if (e >= kEpochsInFlight) {
        comm.wait_event(progress[e - kEpochsInFlight].get(), "epoch " + std::to_string(e - kEpochsInFlight), watch);
      }
    }
    marks.stop.record(st);
    comm.wait_event(marks.stop.get(), "the last epochs", watch);
    return static_cast<double>(elapsed_ms(marks.start, marks.stop));
  };
  run(true);  // the checked run, also the warm-up
  std::vector<double> runs_ms;
  for (int i = 0; i < repeats; ++i) runs_ms.push_back(run(false));

  replica.enqueue_test_sums();
  comm.call(ncclAllReduce(replica.test_sums(), replica.test_sums(), 3, ncclFloat, ncclSum, comm.get(), st),
            "test all-reduce", watch);
  Event done;
  done.record(st);
  comm.wait_event(done.get(), "the test all-reduce", watch);
  const Replica::Result r = replica.read(epochs);

  RankResult mine;
  mine.rank = s.rank;
  mine.device = s.device;
  mine.w = r.w;
  mine.b = r.b;
  mine.test_mse = r.test_sum * static_cast<float>(1.0 / problem.test_points);
  mine.shard_points = replica.train_shard().count;
  finish_timing(mine.timing, runs_ms, epochs);
  marks.summarize(mine.timing);

  // Every rank's numbers to every rank: one all-gather of a few doubles each (w and b as floats
  // widened exactly, so their bits survive).
  constexpr int kFields = 10;
  const double fields[kFields] = {static_cast<double>(mine.rank), static_cast<double>(mine.device), mine.w, mine.b,
                                  mine.test_mse, mine.timing.training_ms.median, mine.timing.training_ms.min,
                                  mine.timing.training_ms.max, mine.timing.compute_us, mine.timing.allreduce_us};
  // Pinned host memory: a copy from pageable memory would block the host outside the watch.
  PinnedBuffer<double> host_fields(kFields), all(static_cast<std::size_t>(kFields) * s.world_size);
  std::copy(fields, fields + kFields, host_fields.data());
  DeviceBuffer<double> send(kFields), gathered(all.size());
  CUDA_CHECK(cudaMemcpyAsync(send.data(), host_fields.data(), send.bytes(), cudaMemcpyHostToDevice, st));
  comm.call(ncclAllGather(send.data(), gathered.data(), kFields, ncclFloat64, comm.get(), st), "result all-gather",
            watch);
  CUDA_CHECK(cudaMemcpyAsync(all.data(), gathered.data(), gathered.bytes(), cudaMemcpyDeviceToHost, st));
  done.record(st);
  comm.wait_event(done.get(), "the result all-gather", watch);
  comm.finalize(watch);

  ParallelRun out;
  out.mode = "ddp";
  out.losses = r.losses;  // every rank's losses are the same bits; this rank's stand for all
  for (int k = 0; k < s.world_size; ++k) {
    const double* f = all.data() + static_cast<std::size_t>(k) * kFields;
    RankResult rr;
    rr.rank = static_cast<int>(f[0]);
    rr.device = static_cast<int>(f[1]);
    rr.w = static_cast<float>(f[2]);
    rr.b = static_cast<float>(f[3]);
    rr.test_mse = f[4];
    rr.timing.training_ms.median = f[5];
    rr.timing.training_ms.min = f[6];
    rr.timing.training_ms.max = f[7];
    rr.timing.training_ms.count = static_cast<std::size_t>(repeats);
    rr.timing.epoch_us = 1e3 * f[5] / epochs;
    rr.timing.compute_us = f[8];
    rr.timing.allreduce_us = f[9];
    rr.shard_points = shard_of(problem.train_points, s.world_size, k).count;
    out.ranks.push_back(rr);
  }
  return out;
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

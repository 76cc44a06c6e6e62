// multi_gpu.cu: chapter 06's lesson. Chapter 05 trained the regression on one GPU; here the same
// training runs on every GPU of a machine (or several), data-parallel, the way PyTorch's
// DataParallel and DistributedDataParallel do it. The training set is cut into one shard per GPU;
// each epoch, every GPU computes chapter 05's three sums over its shard, NCCL all-reduces those
// three floats, and every GPU applies the same SGD step: the same bits of w and b everywhere.
// Read it beside "The Role of GPUs in Deep Learning" (DataParallel, DistributedDataParallel) and
// "Understanding the Host and Device Paradigm" (ranks: one process per GPU).
//
//   multi_gpu                           # dp: one process drives every GPU (the DataParallel analog)
//   mpirun -np 2 multi_gpu ddp          # one process per GPU (the DDP analog); or, without MPI,
//   multi_gpu_bench ddp --nproc 2       # the bench's launcher starts the ranks, as torchrun would
//   multi_gpu --exchange one_shot       # the sums meet by hand over NVLink, no NCCL in the loop
//   multi_gpu_bench ...                 # topology, all-reduce sweep, faults, scaling (bench_multi_gpu.cpp)
//
// What one GPU does each epoch (its shard's three sums, the step) is replica.cu; --exchange picks
// how the sums meet (exchange.h): NCCL's all-reduce on the replica's buffer or on a symmetric
// window (symmetric_windows.h), or the one-shot mailbox written by hand (one_shot_exchange.h).
#include "multi_gpu.cuh"

#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "gpu_probe.h"
#include "mpi_bootstrap.h"
#include "nccl_check.h"
#include "nvtx.h"
#include "program.h"
#include "rank_environment.h"
#include "regression_cli.h"
#include "report.h"
#include "stream.h"
#include "symmetric_windows.h"
#include "table.h"

#include <algorithm>
#include <future>
#include <thread>
#include <iomanip>
#include <memory>

namespace workbook::multi_gpu {
namespace {

// How many epochs the host may run ahead of the GPU in the DDP loop before it waits (polling):
// enough that the GPU never starves, few enough that a hang is seen within an epoch or two, and
// so few collectives in flight that a blocking ncclAllReduce never waits for room in NCCL's queue.
constexpr int kEpochsInFlight = 4;

// One timed run's figures of a rank, from its events and what it read back.
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

// A one-shot wait that gave up: one line naming the rank it waited for (in dp only a bug could
// cause one; in ddp the communicator's waits see it first, see Communicator::watch_exchange).
void require_no_exchange_failure(const OneShotMailbox* box, const std::string& who, int epochs) {
  if (box == nullptr) return;
  if (auto line = box->failure(epochs)) throw std::runtime_error(who + ": " + *line);
}

constexpr const char* kOneShotNote = "one_shot: each GPU writes its sums into a slot of every GPU's mailbox";

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// The DataParallel analog: one process, a plan per device (cuda-samples' simpleMultiGPU), and
// each epoch queued on every device before the host waits for any.

ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats,
                                ExchangeOptions x) {
  NvtxRange range("data parallel");
  const int count = static_cast<int>(devices.size());
  const int epochs = problem.config.epochs;
  const bool one_shot = x.kind == ExchangeKind::kOneShot;
  // one_shot: every GPU writes into every other's mailbox (on until the mailboxes are gone).
  const PeerAccess peer_access = one_shot ? PeerAccess(devices) : PeerAccess();
  struct Plan {  // what one device holds, all made with that device current (events included)
    int device = 0;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Replica> replica;
    std::unique_ptr<OneShotMailbox> mailbox;  // one_shot: slot r holds GPU r's sums
    std::unique_ptr<Event> start, stop;
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
  const DrainMailboxesFirst drain_first(plans);  // runs before any plan is freed
  for (int d = 0; d < count; ++d) {
    Plan& p = plans[d];
    p.device = devices[d];
    CUDA_CHECK(cudaSetDevice(p.device));
    p.stream = std::make_unique<Stream>();
    p.replica = std::make_unique<Replica>(problem, shard_of(problem.train_points, count, d),
                                          shard_of(problem.test_points, count, d, problem.train_points),
                                          p.stream->get());
    p.start = std::make_unique<Event>(EventTiming::kEnabled);
    p.stop = std::make_unique<Event>(EventTiming::kEnabled);
    if (one_shot) p.mailbox = std::make_unique<OneShotMailbox>(count, d, x.timeout_s);
  }
  // One communicator per device, all made by this thread in one call; this thread issues every
  // device's part of each collective inside one group. An exception aborts them (CommunicatorGroup).
  CommunicatorGroup comms = CommunicatorGroup::init_all(devices);
  ParallelRun out;
  out.exchange = exchange_name(x.kind);
  SymmetricWindows windows;  // nccl_symmetric: each GPU's sums in a registered window
  if (one_shot) {            // every GPU learns where every mailbox is (peer access is on)
    std::vector<MailboxSlot*> mailboxes;
    for (Plan& p : plans) mailboxes.push_back(p.mailbox->local());
    for (Plan& p : plans) {
      p.mailbox->connect(mailboxes);
      p.replica->use_one_shot(p.mailbox.get());
    }
    comms.on_abort([&plans] { for (Plan& p : plans) p.mailbox->abort(); });
    out.exchange_note = kOneShotNote + std::string(" (peer access)");
  } else if (x.kind == ExchangeKind::kNcclSymmetric) {
    windows = SymmetricWindows::register_group(comms, devices);
    out.exchange_note = windows.note();
    if (!windows.active()) out.exchange = exchange_name(ExchangeKind::kNccl);
    for (int d = 0; d < count && windows.active(); ++d) plans[d].replica->use_sums_buffer(windows.buffer(d));
  }
  auto on = [](const Plan& p) { CUDA_CHECK(cudaSetDevice(p.device)); };
  auto all_reduce = [&](auto buffer_of) {
    NCCL_CHECK(ncclGroupStart());  // one collective across the devices of this thread
    for (int d = 0; d < count; ++d) {
      float* buffer = buffer_of(*plans[d].replica);
      NCCL_CHECK(ncclAllReduce(buffer, buffer, 3, ncclFloat, ncclSum, comms.get(static_cast<std::size_t>(d)),
                               plans[d].stream->get()));
    }
    NCCL_CHECK(ncclGroupEnd());
  };

  // One run: every epoch queued on every device (sums, then the all-reduce, then the step); the
  // host waits only at the end.
  auto run = [&] {
    for (Plan& p : plans) {
      on(p);
      p.replica->enqueue_reset();
      p.start->record(p.stream->get());
    }
    for (int e = 0; e < epochs; ++e) {
      for (Plan& p : plans) {
        on(p);
        p.replica->enqueue_sums();  // one_shot: its last block also writes the sums into every GPU's mailbox
      }
      if (!one_shot) all_reduce([](Replica& r) { return r.sums(); });  // the stock buffer, or the window
      for (Plan& p : plans) {
        on(p);
        p.replica->enqueue_step(e);  // one_shot: waits for every GPU's slot, adds them in rank order, steps
      }
    }
    for (Plan& p : plans) {
      on(p);
      p.stop->record(p.stream->get());
    }
    for (Plan& p : plans) {
      on(p);
      p.stream->synchronize();
      require_no_exchange_failure(p.mailbox.get(), "GPU " + std::to_string(p.device), epochs);
      p.runs_ms.push_back(elapsed_ms(*p.start, *p.stop));
    }
  };
  run();  // the warm-up; its result is the one checked, as every run gives the same bits
  for (Plan& p : plans) p.runs_ms.clear();
  for (int i = 0; i < repeats; ++i) run();

  // The test loss: each device's test shard, all-reduced like the gradient sums.
  for (Plan& p : plans) {
    on(p);
    p.replica->enqueue_test_sums();
  }
  all_reduce([](Replica& r) { return r.test_sums(); });
  out.mode = "dp";
  for (int d = 0; d < count; ++d) {
    on(plans[d]);
    plans[d].stream->synchronize();
    out.ranks.push_back(rank_result(d, plans[d].device, *plans[d].replica, problem, plans[d].runs_ms));
    if (d == 0) out.losses = plans[d].replica->read(epochs).losses;
  }
  windows.close();   // deregistered and freed before the communicators go
  comms.finalize();  // every stream synchronized above: grouped finalize, then destroy
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return out;
}

// ---------------------------------------------------------------------------------------------
// The DDP analog: this process is one rank and drives one GPU; the ranks meet only in NCCL.

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
  // one_shot: this rank's mailbox, made before the communicator so that it outlives it (an abort
  // of the communicator first stops the mailbox's waits on the GPU). Its waits give up a little
  // before the host's would, so that the error names the rank that never came.
  std::optional<OneShotMailbox> mailbox;
  if (s.exchange == ExchangeKind::kOneShot) mailbox.emplace(s.world_size, s.rank, 0.9 * watch.timeout_s);
  Communicator comm = Communicator::init_rank(s.id, s.world_size, s.rank, watch, s.nonblocking);
  const cudaStream_t st = stream.get();
  ParallelRun out;
  out.exchange = exchange_name(s.exchange);
  SymmetricWindows windows;  // nccl_symmetric: the sums in a registered window
  if (mailbox) {
    comm.watch_exchange([&] { mailbox->abort(); }, [&] { return mailbox->failure(epochs); });
    connect_over_nccl(*mailbox, comm, st, watch);  // every rank's mailbox mapped here (CUDA IPC)
    mailbox->inject_fault_from(watch);
    replica.use_one_shot(&*mailbox);
    out.exchange_note = kOneShotNote + std::string(" (CUDA IPC)");
  } else if (s.exchange == ExchangeKind::kNcclSymmetric) {
    windows = SymmetricWindows::register_rank(comm, st, watch);
    out.exchange_note = windows.note();
    if (windows.active()) replica.use_sums_buffer(windows.buffer(0));
    else out.exchange = exchange_name(ExchangeKind::kNccl);
  }
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  std::vector<Event> progress(static_cast<std::size_t>(epochs));  // the host's pacing marks

  // One run. The host never blocks in CUDA: it waits by polling (comm.wait_event), so that a peer
  // that died is noticed and every wait ends within the watch's bound.
  auto run = [&] {
    replica.enqueue_reset();
    start.record(st);
    for (int e = 0; e < epochs; ++e) {
      replica.enqueue_sums();  // one_shot: its last block also writes the sums into every rank's mailbox
      if (!mailbox) comm.all_reduce_sum(replica.sums(), 3, st, watch);  // the stock buffer, or the window
      replica.enqueue_step(e);  // one_shot: waits for every rank's slot, adds them in rank order, steps
      progress[e].record(st);
      if (e >= kEpochsInFlight) {  // at most kEpochsInFlight epochs ahead of the GPU
        comm.wait_event(progress[e - kEpochsInFlight].get(), "epoch " + std::to_string(e - kEpochsInFlight), watch);
      }
    }
    stop.record(st);
    comm.wait_event(stop.get(), "the last epochs", watch);
    return static_cast<double>(elapsed_ms(start, stop));
  };
  run();  // the warm-up; its result is the one checked, as every run gives the same bits
  std::vector<double> runs_ms;
  for (int i = 0; i < repeats; ++i) runs_ms.push_back(run());

  replica.enqueue_test_sums();
  comm.call(ncclAllReduce(replica.test_sums(), replica.test_sums(), 3, ncclFloat, ncclSum, comm.get(), st),
            "test all-reduce", watch);
  Event done;
  done.record(st);
  comm.wait_event(done.get(), "the test all-reduce", watch);
  if (mailbox) mailbox->disconnect();  // unmapped before the all-gather, so no rank frees a mapped mailbox
  const RankResult mine = rank_result(s.rank, s.device, replica, problem, runs_ms);

  // Every rank's figures to every rank: one all-gather of a few doubles each (w and b as floats
  // widened exactly, so their bits survive). Pinned host memory: a copy from pageable memory
  // would block the host outside the watch.
  constexpr int kFields = 8;
  PinnedBuffer<double> host_fields(kFields), all(static_cast<std::size_t>(kFields) * s.world_size);
  const double fields[kFields] = {static_cast<double>(mine.rank), static_cast<double>(mine.device), mine.w, mine.b,
                                  mine.test_mse, mine.training_ms.median, mine.training_ms.min, mine.training_ms.max};
  std::copy(fields, fields + kFields, host_fields.data());
  DeviceBuffer<double> send(kFields), gathered(all.size());
  CUDA_CHECK(cudaMemcpyAsync(send.data(), host_fields.data(), send.bytes(), cudaMemcpyHostToDevice, st));
  comm.call(ncclAllGather(send.data(), gathered.data(), kFields, ncclFloat64, comm.get(), st), "result all-gather",
            watch);
  CUDA_CHECK(cudaMemcpyAsync(all.data(), gathered.data(), gathered.bytes(), cudaMemcpyDeviceToHost, st));
  done.record(st);
  comm.wait_event(done.get(), "the result all-gather", watch);
  windows.close();
  comm.finalize(watch);

  out.mode = "ddp";
  out.losses = replica.read(epochs).losses;  // every rank's losses are the same bits
  for (int k = 0; k < s.world_size; ++k) {
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
    r.epoch_us = 1e3 * f[5] / epochs;
    r.shard_points = shard_of(problem.train_points, s.world_size, k).count;
    out.ranks.push_back(r);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The checks: against the float64 reference, and against one GPU.

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

// ---------------------------------------------------------------------------------------------
// The program: train, check against the float64 reference and against one GPU, one table.
// (multi_gpu_bench and the tests link everything above, and bring their own main.)
#ifndef WORKBOOK_LESSON_LIBRARY
namespace {

using namespace workbook;
using namespace workbook::multi_gpu;

struct Options {
  CommonOptions common;
  regression::Config config;
  int gpus = 0;  // dp: GPUs from --device on (0: all)
  int repeats = 5;
  std::int64_t reference_max = 20'000'000;
  double timeout_s = 30.0;
  bool nonblocking = false;
  std::string exchange = "nccl";  // --exchange, checked by parse_exchange
};

// The float64 reference on a host thread while the GPUs train, when the problem is small enough.
// Not std::async: its future waits for the thread in its destructor, so a rank whose peer died
// would finish the whole reference (seconds at 20M points) before it could leave. A detached
// thread's future does not wait; a failed rank's process exit ends the thread.
std::future<regression::TrainingResult> start_reference(const regression::Config& c, std::int64_t reference_max) {
  if (c.points > reference_max) return {};
  std::packaged_task<regression::TrainingResult()> task(
      [c] { return regression::train_reference(regression::make_dataset_cpu(c), c); });
  std::future<regression::TrainingResult> result = task.get_future();
  std::thread(std::move(task)).detach();
  return result;
}

std::string errors(const regression::Check& c) {
  return format("relative error w %.2e  b %.2e  losses %.2e  test %.2e  %s", c.w, c.b, c.losses, c.test_mse,
                c.ok ? "ok" : ("FAILED: " + c.failure).c_str());
}

// Checks a finished run (bit-identity, the reference, one GPU) and prints it as one table.
void report_run(const ParallelRun& run, const regression::Config& c, std::future<regression::TrainingResult> reference,
                Report& report) {
  std::ostream& out = report.out();
  Table table({{"rank", "rank"}, {"device", "GPU"}, {"shard_points", "shard points"}, {"w", "w", 9}, {"b", "b", 9},
               {"test_mse", "test MSE", 7}, {"epoch_us", "epoch us", 2}, {"training_ms", ""}});
  for (const RankResult& r : run.ranks) {
    table.add_row().set("rank", r.rank).set("device", r.device).set("shard_points", r.shard_points).set("w", r.w)
        .set("b", r.b).set("test_mse", r.test_mse).set("epoch_us", r.epoch_us)
        .set("training_ms", {{"median", r.training_ms.median}, {"min", r.training_ms.min}, {"max", r.training_ms.max}});
  }
  table.print(out);
  report.json()["ranks"] = table.json();
  report.json()["exchange"] = {{"used", run.exchange}, {"note", run.exchange_note}};
  if (!run.exchange_note.empty()) out << "exchange: " << run.exchange_note << "\n";
  out << "every rank's w, b and test MSE bit-identical: " << (run.bit_identical() ? "yes" : "NO") << "\n";
  report.check(run.bit_identical(), run.mode + ": ranks ended with different w, b or test MSE");
  if (reference.valid()) {
    const regression::TrainingResult want = reference.get();
    const regression::Check v = check_against_reference(run, want);
    out << "against the float64 reference (04's tolerances): " << errors(v) << "\n";
    report.check(v.ok, run.mode + ": " + v.failure);
    if (want.diverged_at) report.check(false, run.mode + ": diverged at epoch " + std::to_string(*want.diverged_at));
  } else {
    out << "float64 reference: skipped above --reference-max points (checked against one GPU instead)\n";
  }
  std::string why_not;
  CUDA_CHECK(cudaSetDevice(run.ranks.front().device));
  if (const auto single = single_gpu(c, &why_not)) {
    const regression::Check v = check_against_single_gpu(run, *single);
    const bool same_bits = single->w == run.ranks.front().w && single->b == run.ranks.front().b;
    out << "against one GPU (no all-reduce; twice 04's tolerances): " << errors(v)
        << (same_bits ? " (same bits of w and b)" : "") << "\n";
    report.check(v.ok, run.mode + ": " + v.failure);
  } else {
    out << "one GPU: skipped: " << why_not << "\n";
  }
  out << "losses (rank 0, read after training; every --print-every epochs):\n";
  for (int e : regression::printed_epochs(static_cast<int>(run.losses.size()), c.print_every)) {
    out << "  epoch " << std::setw(4) << e << "  loss " << std::setprecision(7) << run.losses[e] << "\n";
  }
  out << "time per epoch (slowest rank, median of " << run.slowest().training_ms.count
      << " timed runs, CUDA events): " << format("%.2f", run.slowest().epoch_us) << " us\n";
}

int run_dp(const Options& o) {
  const std::vector<int> devices = pick_devices(o.common.device, o.gpus);
  const Problem problem = make_problem(o.config);
  Report report("multi_gpu", o.common.json);
  report.out() << "multi_gpu dp: one process drives " << devices.size() << " GPU" << (devices.size() == 1 ? "" : "s")
               << "; " << o.config.points << " points (" << problem.train_points << " train), " << o.config.epochs
               << " epochs, lr " << o.config.lr << "; " << forced_environment_text() << "\n";
  auto reference = start_reference(o.config, o.reference_max);
  const ExchangeOptions exchange{parse_exchange(o.exchange), o.timeout_s};
  report_run(train_data_parallel(problem, devices, o.repeats, exchange), o.config, std::move(reference), report);
  return report.finish();
}

// One rank of a DDP run, started by multi_gpu_bench's launcher or by mpirun. Rank 0 reports.
int run_ddp_rank(const Options& o, int rank, int world, int local_rank, const ncclUniqueId& id, const Watch& watch) {
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  DdpSetup s{rank, world, device_for_local_rank(local_rank, o.common.device, gpus.device_count), id, watch,
             o.nonblocking, parse_exchange(o.exchange)};
  const Problem problem = make_problem(o.config);
  auto reference = rank == 0 ? start_reference(o.config, o.reference_max) : std::future<regression::TrainingResult>{};
  const ParallelRun run = train_ddp_rank(problem, s, o.repeats);
  if (rank != 0) return run.bit_identical() ? kExitOk : kExitFailure;
  Report report("multi_gpu", o.common.json);
  report.out() << "multi_gpu ddp: rank 0 of " << world << " on GPU " << s.device << "; " << o.config.points
               << " points (" << problem.train_points << " train), " << o.config.epochs << " epochs, lr "
               << o.config.lr << "; " << (s.nonblocking ? "non-blocking" : "blocking") << " communicators; "
               << forced_environment_text() << "\n";
  report_run(run, o.config, std::move(reference), report);
  return report.finish();
}

int run(int argc, char** argv) {
  CLI::App app{"Chapter 06: data-parallel training, one process for every GPU (dp) or one per GPU (ddp)"};
  Options o;
  add_common_options(app, o.common);
  app.fallthrough();  // the flags may come before or after the subcommand
  regression::add_problem_options(app, o.config);
  app.add_option("--gpus", o.gpus, "dp: GPUs to use from --device on (default: all)")->type_name("G");
  app.add_option("--repeats", o.repeats, "timed runs after the warm-up run")->type_name("R");
  add_size_option(app, "--reference-max", o.reference_max, "largest point count checked against the float64 CPU reference");
  app.add_option("--timeout-s", o.timeout_s, "the longest wait for the other ranks without progress (ddp; one_shot too)")
      ->type_name("S");
  app.add_flag("--nccl-nonblocking", o.nonblocking, "ddp: communicators with ncclConfig_t::blocking = 0");
  app.add_option("--exchange", o.exchange, "how the sums meet: nccl (default), nccl_symmetric or one_shot")
      ->type_name("X");
  app.add_subcommand("dp", "DataParallel analog: one process, every GPU (the default)");
  CLI::App* ddp = app.add_subcommand("ddp", "DistributedDataParallel analog: one rank, started by mpirun or multi_gpu_bench");
  app.require_subcommand(0, 1);
  if (auto code = parse_command_line(app, argc, argv)) return *code;
  if (o.common.quick && app.count("--points") == 0) o.config.points = 200'003;  // odd: shards of unequal size
  if (o.common.quick && app.count("--epochs") == 0) o.config.epochs = 20;
  if (o.common.quick && app.count("--repeats") == 0) o.repeats = 1;
  if (o.common.quick && app.count("--timeout-s") == 0) o.timeout_s = 60.0;  // sanitizers slow everything down
  o.config.lr = effective_lr(app.count("--lr") ? std::optional<double>(o.config.lr) : std::nullopt, o.config.points);
  regression::validate(o.config);
  require_at_least("--gpus", o.gpus, 0);
  require_at_least("--repeats", o.repeats, 1);
  require_positive("--timeout-s", o.timeout_s);
  (void)parse_exchange(o.exchange);  // a bad name is bad usage before any CUDA call
  if (!ddp->parsed()) return run_dp(o);

  if (const auto me = worker_identity_from_environment(&process_environment)) {  // the bench's launcher
    ControlChannel control(me->control_fd, me->heartbeat_fd);
    const Watch watch{o.timeout_s, &control, "rank " + std::to_string(me->rank), me->fail_epoch};
    return run_ddp_rank(o, me->rank, me->world_size, me->local_rank, decode_unique_id(me->nccl_id_hex), watch);
  }
  if (!launched_by_mpi(&process_environment)) {
    throw UsageError("ddp runs one process per GPU: start the ranks with `multi_gpu_bench ddp --nproc N`"
                     " or `mpirun -np N multi_gpu ddp`");
  }
  if (!mpi_built_in()) throw UsageError("started by mpirun, but this build has no MPI (install libopenmpi-dev, reconfigure)");
  MpiSession mpi(&argc, &argv);
  try {
    ncclUniqueId id;
    if (mpi.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    mpi.broadcast_from_root(&id, sizeof id);
    return run_ddp_rank(o, mpi.rank(), mpi.size(), mpi.local_rank(), id,
                        Watch{o.timeout_s, nullptr, "rank " + std::to_string(mpi.rank())});
  } catch (const std::exception& e) {
    std::cerr << "error: rank " << mpi.rank() << ": " << e.what() << "\n" << std::flush;  // mpirun stops the others
    mpi.abort(kExitFailure);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("multi_gpu", [&] {
    // First, while this process has one thread and before any NCCL call: NVLink multicast off,
    // whatever the environment said (rank_environment.h).
    workbook::multi_gpu::apply_forced_environment();
    return run(argc, argv);
  });
}
#endif  // WORKBOOK_LESSON_LIBRARY

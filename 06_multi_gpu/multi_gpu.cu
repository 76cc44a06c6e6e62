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
//   multi_gpu --on-chip                 # every epoch in one launch, each shard on its GPU's chip
//
// The lesson's files, in the order the README's "Where to look" reads them:
//   replica.cu            what one GPU does: its shard's three sums (and their CPU twin), the step
//   multi_gpu.cu (here)   DataParallel: one process, a plan per GPU, one NCCL group per epoch
//   ddp.cu                DistributedDataParallel: a rank per GPU, its communicator from the launcher
//   one_shot_exchange.cu  the exchange written by hand: a mailbox on every GPU, written over NVLink
//   on_chip.cu            training on the GPUs' chips: every epoch in one launch, the exchange inside
// The program at the end prints its report in steps, == 1. to == 6., each marked // 1. ... here.
// The rest (harness/) keeps it safe and measures it: bounded NCCL waits, the launcher, MPI's
// start, symmetric windows, the bench (multi_gpu_bench).
#include "multi_gpu.h"

#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "gpu_probe.h"
#include "support/mpi_bootstrap.h"
#include "support/rank_environment.h"
#include "bench/symmetric_windows.h"
#include "nccl_check.h"
#include "nvtx.h"
#include "one_shot_exchange.h"
#include "program.h"
#include "provenance.h"
#include "regression_cli.h"
#include "report.h"
#include "stream.h"
#include "table.h"

#include <algorithm>
#include <future>
#include <memory>
#include <thread>

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

// ---------------------------------------------------------------------------------------------
// The DataParallel analog: one process, a plan per device (cuda-samples' simpleMultiGPU), and
// each epoch queued on every device before the host waits for any.

namespace {

struct Plan {  // what one device holds, all made with that device current (events included)
  int device = 0;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<OneShotMailbox> mailbox;  // one_shot: slot r holds GPU r's sums
  std::unique_ptr<Event> start, stop;
  std::vector<double> runs_ms;
};

void make_current(const Plan& p) { CUDA_CHECK(cudaSetDevice(p.device)); }  // launches go to the current device

// One plan per device: its stream, its Replica over its shard, its events. Every device's shard is
// asked for before any is allocated, so a size that does not fit is one line.
std::vector<Plan> make_plans(const Problem& problem, const std::vector<int>& devices, const ExchangeOptions& exchange) {
  const int count = static_cast<int>(devices.size());
  auto train_shard = [&](int d) { return shard_of(problem.train_points, count, d); };
  auto test_shard = [&](int d) { return shard_of(problem.test_points, count, d, problem.train_points); };
  for (int d = 0; d < count; ++d) {
    CUDA_CHECK(cudaSetDevice(devices[d]));
    require_gpu_memory("--points " + std::to_string(problem.config.points) + " (GPU " + std::to_string(devices[d]) +
                           "'s shard of " + std::to_string(count) + ")",
                       Replica::bytes_needed(problem, train_shard(d), test_shard(d)));
  }
  std::vector<Plan> plans(devices.size());
  for (int d = 0; d < count; ++d) {
    Plan& p = plans[d];
    p.device = devices[d];
    make_current(p);
    p.stream = std::make_unique<Stream>();
    p.replica = std::make_unique<Replica>(problem, train_shard(d), test_shard(d), p.stream->get());
    p.start = std::make_unique<Event>(EventTiming::kEnabled);
    p.stop = std::make_unique<Event>(EventTiming::kEnabled);
    if (exchange.kind == ExchangeKind::kOneShot) p.mailbox = std::make_unique<OneShotMailbox>(count, d, exchange.timeout_s);
  }
  return plans;
}

// The all-reduce of one buffer of 3 floats per device (the sums or the test sums), as ONE collective.
void all_reduce(std::vector<Plan>& plans, const CommunicatorGroup& comms, float* (Replica::*buffer_of)()) {
  std::vector<float*> buffers;
  std::vector<ncclComm_t> per_device;
  std::vector<cudaStream_t> streams;
  for (std::size_t d = 0; d < plans.size(); ++d) {
    buffers.push_back((plans[d].replica.get()->*buffer_of)());
    per_device.push_back(comms.get(d));
    streams.push_back(plans[d].stream->get());
  }
  all_reduce_sums(buffers, per_device, streams);
}

// --exchange one_shot: every mailbox learns where every other is (peer access is on), and the
// replicas exchange through them; nccl_symmetric: the sums move into registered windows.
void connect_exchange(ExchangeKind kind, std::vector<Plan>& plans, CommunicatorGroup& comms, SymmetricWindows& windows,
                      const std::vector<int>& devices, ParallelRun& out) {
  if (kind == ExchangeKind::kOneShot) {
    std::vector<MailboxSlot*> mailboxes;
    for (Plan& p : plans) mailboxes.push_back(p.mailbox->local());
    for (Plan& p : plans) {
      p.mailbox->connect(mailboxes);
      p.replica->use_one_shot(p.mailbox.get());
    }
    comms.on_abort([&plans] { for (Plan& p : plans) p.mailbox->abort(); });
    out.exchange_note = kOneShotNote + std::string(" (peer access)");
  } else if (kind == ExchangeKind::kNcclSymmetric) {
    windows = SymmetricWindows::register_group(comms, devices);
    out.exchange_note = windows.note();
    if (!windows.active()) out.exchange = exchange_name(ExchangeKind::kNccl);
    for (std::size_t d = 0; d < plans.size() && windows.active(); ++d) plans[d].replica->use_sums_buffer(windows.buffer(d));
  }
}

// One run: every epoch queued on every device (sums, then the all-reduce, then the step); the
// host waits only at the end. By hand, one kernel per GPU and epoch does all three; --on-chip, one
// launch per device does every epoch. Each plan gets the run's time, between its two events.
void run_once(std::vector<Plan>& plans, const CommunicatorGroup& comms, int epochs, const ExchangeOptions& exchange) {
  const bool by_hand = exchange.kind == ExchangeKind::kOneShot;
  const UnsyncedLaunches waits_for_peers;  // by hand: GPU 0's kernel waits for GPU 1's, queued after it
  for (Plan& p : plans) {
    make_current(p);
    p.replica->enqueue_reset();
    p.start->record(p.stream->get());
    if (exchange.on_chip) p.replica->enqueue_all_epochs_on_chip();
  }
  for (int e = 0; e < epochs && !exchange.on_chip; ++e) {
    for (Plan& p : plans) {
      make_current(p);
      if (by_hand) {
        p.replica->enqueue_epoch_one_shot(e);  // one kernel: its sums, into every mailbox, all added, the step
      } else {
        p.replica->enqueue_sums();  // each GPU: its shard's three sums
      }
    }
    if (by_hand) continue;
    all_reduce(plans, comms, &Replica::sums);  // every GPU's sums, added, on every GPU
    for (Plan& p : plans) {
      make_current(p);
      p.replica->enqueue_step(e);  // each GPU: the same step on the same sums
    }
  }
  for (Plan& p : plans) {
    make_current(p);
    p.stop->record(p.stream->get());
  }
  for (Plan& p : plans) {
    make_current(p);
    p.stream->synchronize();
    if (p.mailbox) p.mailbox->throw_if_failed("GPU " + std::to_string(p.device), epochs);
    p.runs_ms.push_back(elapsed_ms(*p.start, *p.stop));
  }
}

}  // namespace

// DataParallel's all-reduce: this one thread issues every device's part between ncclGroupStart
// and ncclGroupEnd, so NCCL launches them as one collective (issued one by one, the first would
// wait for peers that this thread has not reached yet).
void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams) {
  NCCL_CHECK(ncclGroupStart());
  for (std::size_t d = 0; d < buffers.size(); ++d) {
    NCCL_CHECK(ncclAllReduce(buffers[d], buffers[d], 3, ncclFloat, ncclSum, comms[d], streams[d]));
  }
  NCCL_CHECK(ncclGroupEnd());
}

ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats,
                                ExchangeOptions exchange) {
  NvtxRange range("data parallel");
  const bool by_hand = exchange.kind == ExchangeKind::kOneShot;  // the one-shot exchange, no NCCL in the loop
  if (exchange.on_chip && !by_hand) throw std::logic_error("train_data_parallel: on_chip needs the one-shot exchange");
  // one_shot: every GPU writes into every other's mailbox (on until the mailboxes are gone).
  const PeerAccess peer_access = by_hand ? PeerAccess(devices) : PeerAccess();
  std::vector<Plan> plans = make_plans(problem, devices, exchange);
  const DrainMailboxesFirst drain_first(plans);  // runs before any plan is freed
  // One communicator per device, all made by this thread in one call (ncclCommInitAll). An
  // exception aborts them (CommunicatorGroup).
  CommunicatorGroup comms = CommunicatorGroup::init_all(devices);
  SymmetricWindows windows;  // nccl_symmetric: each GPU's sums in a registered window
  ParallelRun out;
  out.mode = "dp";
  out.exchange = exchange_name(exchange.kind);
  connect_exchange(exchange.kind, plans, comms, windows, devices, out);
  out.on_chip = exchange.on_chip;
  for (Plan& p : plans) {
    make_current(p);
    if (exchange.on_chip) p.replica->use_on_chip(p.mailbox.get());  // OnChipDoesNotFit above the room
  }

  run_once(plans, comms, problem.config.epochs, exchange);  // the warm-up, untimed (every run gives the same bits)
  for (Plan& p : plans) p.runs_ms.clear();
  for (int i = 0; i < repeats; ++i) run_once(plans, comms, problem.config.epochs, exchange);

  // The test loss: each device's test shard, all-reduced like the gradient sums.
  for (Plan& p : plans) {
    make_current(p);
    p.replica->enqueue_test_sums();
  }
  all_reduce(plans, comms, &Replica::test_sums);
  for (std::size_t d = 0; d < plans.size(); ++d) {
    make_current(plans[d]);
    plans[d].stream->synchronize();
    out.ranks.push_back(rank_result(static_cast<int>(d), plans[d].device, *plans[d].replica, problem, plans[d].runs_ms));
  }
  out.losses = plans.front().replica->read(problem.config.epochs).losses;
  windows.close();   // deregistered and freed before the communicators go
  comms.finalize();  // every stream synchronized above: grouped finalize, then destroy
  CUDA_CHECK(cudaSetDevice(devices.front()));
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
namespace workbook::multi_gpu {
namespace {

struct Options {
  CommonOptions common;
  regression::Config config;
  bool ddp = false;  // the ddp subcommand: one rank of a DDP run; else dp
  int gpus = 0;      // dp: GPUs from --device on (0: all)
  int repeats = 5;
  std::int64_t reference_max = 20'000'000;
  double timeout_s = 30.0;
  bool nonblocking = false;
  std::string exchange = "nccl";  // --exchange, checked by parse_exchange
  bool on_chip = false;           // --on-chip (exchange one_shot)
};

// Every flag, checked before any CUDA call: nullopt to go on, else the exit code (--help: 0, bad usage: 2).
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 06: data-parallel training, one process for every GPU (dp) or one per GPU (ddp)"};
  add_common_options(app, o.common);
  app.fallthrough();  // the flags may come before or after the subcommand
  regression::add_problem_options(app, o.config);
  app.add_option("--gpus", o.gpus, "dp: GPUs to use from --device on (default: all)")->type_name("G");
  app.add_option("--repeats", o.repeats, "timed runs after the warm-up run")->type_name("R");
  add_size_option(app, "--reference-max", o.reference_max, "largest point count checked against the float64 CPU reference");
  app.add_option("--timeout-s", o.timeout_s, "the longest wait for the other ranks without progress (ddp; one_shot too; at most 86400)")
      ->type_name("S");
  app.add_flag("--nccl-nonblocking", o.nonblocking, "ddp: communicators with ncclConfig_t::blocking = 0");
  app.add_option("--exchange", o.exchange, "how the sums meet: nccl (default), nccl_symmetric or one_shot")
      ->type_name("X");
  app.add_flag("--on-chip", o.on_chip,
               "every epoch in one launch per GPU, each shard kept in its registers and shared memory (the sums "
               "meet by one_shot inside it)");
  app.add_subcommand("dp", "DataParallel analog: one process, every GPU (the default)");
  CLI::App* ddp = app.add_subcommand("ddp", "DistributedDataParallel analog: one rank, started by mpirun or multi_gpu_bench");
  app.require_subcommand(0, 1);
  if (auto code = parse_command_line(app, argc, argv)) return code;
  o.ddp = ddp->parsed();
  if (o.common.quick && app.count("--points") == 0) o.config.points = 200'003;  // odd: the test shards of 2 GPUs differ in size, the training shards of 3
  if (o.common.quick && app.count("--epochs") == 0) o.config.epochs = 20;
  if (o.common.quick && app.count("--repeats") == 0) o.repeats = 1;
  if (o.common.quick && app.count("--timeout-s") == 0) o.timeout_s = 60.0;  // sanitizers slow everything down
  o.config.lr = effective_lr(app.count("--lr") ? std::optional<double>(o.config.lr) : std::nullopt, o.config.points);
  regression::validate(o.config);
  if (app.count("--gpus") > 0) require_at_least("--gpus", o.gpus, 1);  // left out: every GPU
  require_at_least("--repeats", o.repeats, 1);
  require_positive("--timeout-s", o.timeout_s);
  require_at_most("--timeout-s", o.timeout_s, kMaxWaitSeconds);
  (void)parse_exchange(o.exchange);  // a bad name is bad usage before any CUDA call
  if (o.on_chip && app.count("--exchange") > 0 && o.exchange != "one_shot") {
    throw UsageError("--on-chip exchanges the sums by one_shot inside its kernel, not --exchange " + o.exchange);
  }
  if (o.on_chip) o.exchange = "one_shot";
  if (!o.ddp && o.nonblocking) throw UsageError("--nccl-nonblocking is for ddp (dp's communicators come from ncclCommInitAll)");
  if (o.ddp && app.count("--gpus") > 0) throw UsageError("--gpus is for dp (a ddp rank drives one GPU: its local rank's)");
  return std::nullopt;
}

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

// The first line of the report, and the run's settings at the JSON's top level.
void report_settings(Report& report, const Options& o, const Problem& problem, int gpus, const std::string& how) {
  report.out() << format("multi_gpu %s: %s; %lld points (%lld train), %d epochs, lr %g; %s\n", o.ddp ? "ddp" : "dp",
                         how.c_str(), static_cast<long long>(o.config.points),
                         static_cast<long long>(problem.train_points), o.config.epochs, o.config.lr,
                         forced_environment_text().c_str());
  nlohmann::json& j = report.json();
  j["gpus"] = gpus;
  j["quick"] = o.common.quick;
  j["mode"] = o.ddp ? "ddp" : "dp";
  j["points"] = o.config.points;
  j["train_points"] = problem.train_points;
  j["epochs"] = o.config.epochs;
  j["lr"] = o.config.lr;
  j["repeats"] = o.repeats;
}

// Checks a finished run (bit-identity, the reference, one GPU) and prints it in the lesson's steps.
void report_run(const ParallelRun& run, const regression::Config& c, std::future<regression::TrainingResult> reference,
                Report& report) {
  std::ostream& out = report.out();
  // 1. The training: one row per rank (GPU), its shard, where it ended and how long it took.
  out << format("== 1. trained (%s, --exchange %s): one row per rank\n", run.mode.c_str(), run.exchange.c_str());
  Table table({{"rank", "rank"}, {"device", "GPU"}, {"shard_points", "shard points"}, {"w", "w", 9}, {"b", "b", 9},
               {"test_mse", "test MSE", 7}, {"epoch_us", "epoch us", 2},
               {"training_ms", "training ms", 3, Column::Style::kTiming}});
  for (const RankResult& r : run.ranks) {
    table.add_row().set("rank", r.rank).set("device", r.device).set("shard_points", r.shard_points).set("w", r.w)
        .set("b", r.b).set("test_mse", r.test_mse).set("epoch_us", r.epoch_us).set("training_ms", timing(r.training_ms));
  }
  table.print(out);
  report.json()["ranks"] = table.json();
  report.json()["exchange"] = {{"used", run.exchange}, {"note", run.exchange_note}, {"on_chip", run.on_chip}};
  if (!run.exchange_note.empty()) out << "exchange: " << run.exchange_note << "\n";
  if (run.on_chip) out << "on chip: every epoch in one launch per GPU, each shard in its GPU's registers and shared memory\n";
  // 2. Every rank applied the same steps to the same sums: the same bits everywhere.
  out << "== 2. every rank's w, b and test MSE bit-identical: " << (run.bit_identical() ? "yes" : "NO") << "\n";
  report.check(run.bit_identical(), run.mode + ": ranks ended with different w, b or test MSE");
  // 3. Against chapter 04's float64 reference, computed on a host thread meanwhile.
  if (reference.valid()) {
    const regression::TrainingResult want = reference.get();
    const regression::Check v = check_against_reference(run, want);
    out << "== 3. against the float64 reference (04's tolerances): " << errors(v) << "\n";
    report.check(v.ok, run.mode + ": " + v.failure);
    if (want.diverged_at) report.check(false, run.mode + ": diverged at epoch " + std::to_string(*want.diverged_at));
  } else {
    out << "== 3. float64 reference: skipped above --reference-max points (checked against one GPU instead)\n";
  }
  // 4. Against the same training on one GPU, the whole set, no all-reduce.
  std::string why_not;
  CUDA_CHECK(cudaSetDevice(run.ranks.front().device));
  if (const auto single = single_gpu(c, &why_not)) {
    const regression::Check v = check_against_single_gpu(run, *single);
    const bool same_bits = single->w == run.ranks.front().w && single->b == run.ranks.front().b;
    out << "== 4. against one GPU (no all-reduce; twice 04's tolerances): " << errors(v)
        << (same_bits ? " (same bits of w and b)" : "") << "\n";
    report.check(v.ok, run.mode + ": " + v.failure);
  } else {
    out << "== 4. one GPU: skipped: " << why_not << "\n";
  }
  // 5. The losses, read back once after training (no host synchronization inside the loop).
  out << "== 5. losses (rank 0, read after training; every --print-every epochs):\n";
  for (int e : regression::printed_epochs(static_cast<int>(run.losses.size()), c.print_every)) {
    out << format("  epoch %4d  loss %.7g\n", e, run.losses[e]);
  }
  // 6. The time per epoch: the slowest rank's, as every rank waits for it at each all-reduce.
  out << format("== 6. time per epoch (slowest rank, median of %zu timed runs, CUDA events): %.2f us\n",
                run.slowest().training_ms.count, run.slowest().epoch_us);
}

int run_dp(const Options& o) {
  const std::vector<int> devices = pick_devices(o.common.device, o.gpus);
  const Problem problem = make_problem(o.config);
  Report report("multi_gpu", o.common.json);
  const int n = static_cast<int>(devices.size());
  report_settings(report, o, problem, n, format("one process drives %d GPU%s", n, n == 1 ? "" : "s"));
  auto reference = start_reference(o.config, o.reference_max);
  const ExchangeOptions exchange{parse_exchange(o.exchange), o.timeout_s, o.on_chip};
  report_run(train_data_parallel(problem, devices, o.repeats, exchange), o.config, std::move(reference), report);
  return report.finish();
}

// One rank of a DDP run, started by multi_gpu_bench's launcher or by mpirun. Rank 0 reports.
int run_ddp_rank(const Options& o, int rank, int world, int local_rank, const ncclUniqueId& id, const Watch& watch) {
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  DdpSetup s{rank, world, device_for_local_rank(local_rank, o.common.device, gpus.device_count), id, watch,
             o.nonblocking, parse_exchange(o.exchange), o.on_chip};
  const Problem problem = make_problem(o.config);
  auto reference = rank == 0 ? start_reference(o.config, o.reference_max) : std::future<regression::TrainingResult>{};
  const ParallelRun run = train_ddp_rank(problem, s, o.repeats);
  if (rank != 0) return run.bit_identical() ? kExitOk : kExitFailure;
  Report report("multi_gpu", o.common.json);
  report_settings(report, o, problem, world,
                  format("rank 0 of %d on GPU %d; %s communicators", world, s.device,
                         s.nonblocking ? "non-blocking" : "blocking"));
  report_run(run, o.config, std::move(reference), report);
  return report.finish();
}

// ddp: this process is one rank, started by the bench's launcher (its identity in the
// environment) or by mpirun (MPI broadcasts rank 0's NCCL id).
int run_ddp(const Options& o, int& argc, char**& argv) {
  if (const auto me = worker_identity_from_environment(&process_environment)) {  // the bench's launcher
    ControlChannel control(me->control_fd, me->heartbeat_fd);
    const Watch watch{o.timeout_s, &control, "rank " + std::to_string(me->rank)};
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

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  workbook::note_library("nccl", workbook::nccl_version());  // named in every result's provenance
  return o.ddp ? run_ddp(o, argc, argv) : run_dp(o);
}

}  // namespace
}  // namespace workbook::multi_gpu

int main(int argc, char** argv) {
  return workbook::guarded_main("multi_gpu", [&] {
    // First, while this process has one thread and before any NCCL call: NVLink multicast off,
    // whatever the environment said (rank_environment.h).
    workbook::multi_gpu::apply_forced_environment();
    return workbook::multi_gpu::run(argc, argv);
  });
}
#endif  // WORKBOOK_LESSON_LIBRARY

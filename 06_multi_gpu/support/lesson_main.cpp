// lesson_main.cpp: the lesson programs' flags, rank start, checks and report (lesson_main.h).
#include "support/lesson_main.h"

#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "gpu_probe.h"
#include "nccl_check.h"
#include "program.h"
#include "provenance.h"
#include "regression_cli.h"
#include "report.h"
#include "support/mpi_bootstrap.h"
#include "support/rank_environment.h"
#include "table.h"

#include <future>
#include <iostream>
#include <thread>

namespace workbook::multi_gpu {
namespace {


// Every flag, checked before any CUDA call: nullopt to go on, else the exit code (--help: 0, bad usage: 2).
std::optional<int> parse_options(int argc, char** argv, LessonOptions& o, const LessonProgram& program) {
  CLI::App app{program.description};
  add_common_options(app, o.common);
  app.fallthrough();  // the flags may come before or after the subcommand
  regression::add_problem_options(app, o.config);
  app.add_option("--gpus", o.gpus, "dp: GPUs to use from --device on (default: all)")->type_name("G");
  app.add_option("--repeats", o.repeats, "timed runs after the warm-up run")->type_name("R");
  add_size_option(app, "--reference-max", o.reference_max, "largest point count checked against the float64 CPU reference");
  app.add_option("--timeout-s", o.timeout_s, "the longest wait for the other ranks without progress (at most 86400)")
      ->type_name("S");
  app.add_flag("--nccl-nonblocking", o.nonblocking, "ddp: communicators with ncclConfig_t::blocking = 0");
  if (program.on_chip_flag) {
    app.add_flag("--on-chip", o.on_chip,
                 "every epoch in one launch per GPU, each shard kept in its registers and shared memory");
  }
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
  regression::refuse_idle_seed(app, o.config);
  if (app.count("--gpus") > 0) require_at_least("--gpus", o.gpus, 1);  // left out: every GPU
  require_at_least("--repeats", o.repeats, 1);
  require_positive("--timeout-s", o.timeout_s);
  require_at_most("--timeout-s", o.timeout_s, kMaxWaitSeconds);
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
void report_settings(Report& report, const LessonProgram& program, const LessonOptions& o, const Problem& problem, int gpus, const std::string& how) {
  report.out() << format("%s %s: %s; %lld points (%lld train), %d epochs, lr %g; %s\n", program.name, o.ddp ? "ddp" : "dp",
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
  out << format("== 1. trained (%s, exchange %s): one row per rank\n", run.mode.c_str(), run.exchange.c_str());
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
  out << format("== 6. time per epoch (slowest rank, %s, CUDA events): %.2f us\n",
                median_of(static_cast<int>(run.slowest().training_ms.count), "timed run", "timed runs").c_str(),
                run.slowest().epoch_us);
}

int run_dp(const LessonProgram& program, const LessonOptions& o) {
  const std::vector<int> devices = pick_devices(o.common.device, o.gpus);
  const Problem problem = make_problem(o.config);
  Report report(program.name, o.common.json);
  const int n = static_cast<int>(devices.size());
  report_settings(report, program, o, problem, n, format("one process drives %d GPU%s", n, n == 1 ? "" : "s"));
  auto reference = start_reference(o.config, o.reference_max);
  report_run(program.train_dp(problem, devices, o), o.config, std::move(reference), report);
  return report.finish();
}

// One rank of a DDP run, started by multi_gpu_bench's launcher or by mpirun. Rank 0 reports.
int run_ddp_rank(const LessonProgram& program, const LessonOptions& o, int rank, int world, int local_rank, const ncclUniqueId& id, const Watch& watch) {
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  const RankSetup s{rank, world, device_for_local_rank(local_rank, o.common.device, gpus.device_count), id, watch,
                    o.nonblocking};
  const Problem problem = make_problem(o.config);
  auto reference = rank == 0 ? start_reference(o.config, o.reference_max) : std::future<regression::TrainingResult>{};
  const ParallelRun run = program.train_rank(problem, s, o);
  if (rank != 0) return run.bit_identical() ? kExitOk : kExitFailure;
  Report report(program.name, o.common.json);
  report_settings(report, program, o, problem, world,
                  format("rank 0 of %d on GPU %d; %s communicators", world, s.device,
                         s.nonblocking ? "non-blocking" : "blocking"));
  report_run(run, o.config, std::move(reference), report);
  return report.finish();
}

// ddp: this process is one rank, started by the bench's launcher (its identity in the
// environment) or by mpirun (MPI broadcasts rank 0's NCCL id).
int run_ddp(const LessonProgram& program, const LessonOptions& o, int& argc, char**& argv) {
  if (const auto me = worker_identity_from_environment(&process_environment)) {  // the bench's launcher
    ControlChannel control(me->control_fd, me->heartbeat_fd);
    const Watch watch{o.timeout_s, &control, "rank " + std::to_string(me->rank)};
    return run_ddp_rank(program, o, me->rank, me->world_size, me->local_rank, decode_unique_id(me->nccl_id_hex), watch);
  }
  if (!launched_by_mpi(&process_environment)) {
    throw UsageError(std::string("ddp runs one process per GPU: start the ranks with `") + program.bench_start +
                     "` or `mpirun -np N " + program.name + " ddp`");
  }
  if (!mpi_built_in()) throw UsageError("started by mpirun, but this build has no MPI (install libopenmpi-dev, reconfigure)");
  MpiSession mpi(&argc, &argv);
  try {
    ncclUniqueId id;
    if (mpi.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    mpi.broadcast_from_root(&id, sizeof id);
    return run_ddp_rank(program, o, mpi.rank(), mpi.size(), mpi.local_rank(), id,
                        Watch{o.timeout_s, nullptr, "rank " + std::to_string(mpi.rank())});
  } catch (const std::exception& e) {
    std::cerr << "error: rank " << mpi.rank() << ": " << e.what() << "\n" << std::flush;  // mpirun stops the others
    mpi.abort(kExitFailure);
  }
}

}  // namespace

int lesson_main(int argc, char** argv, const LessonProgram& program) {
  return guarded_main(program.name, [&] {
    // First, while this process has one thread and before any NCCL call: NVLink multicast off,
    // whatever the environment said (rank_environment.h).
    apply_forced_environment();
    LessonOptions o;
    if (auto code = parse_options(argc, argv, o, program)) return *code;
    note_library("nccl", nccl_version());  // named in every result's provenance
    return o.ddp ? run_ddp(program, o, argc, argv) : run_dp(program, o);
  });
}

}  // namespace workbook::multi_gpu

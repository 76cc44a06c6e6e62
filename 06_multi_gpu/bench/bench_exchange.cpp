// bench_exchange.cpp: multi_gpu_bench's exchange part: the epoch's 12 bytes alone, each way a
// plug-in (exchange_alone.h), then inside the epoch, then training on the GPUs' chips.
#include "bench_parts.h"

#include "bench_plan.h"
#include "cuda_check.h"
#include "exchange_alone.h"
#include "format.h"
#include "gpu_probe.h"
#include "bench/training_ways.h"
#include "by_hand.h"
#include "multi_gpu.h"
#include "support/nccl_comm.h"
#include "support/rank_environment.h"
#include "table.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace workbook::multi_gpu {
namespace {

using Options = BenchOptions;

// ---------------------------------------------------------------------------------------------
// exchange: the epoch's 12 bytes the three ways of --exchange, alone and inside the epoch

constexpr const char* kExchanges[] = {"nccl", "nccl_symmetric", "one_shot"};  // training_ways.h

// The exchange alone in the DDP form: `n` ranks of this program's `exchange-rank --exchange X`, each
// timing its own GPU (measure_one_shot_rank, measure_nccl_rank) into a JSON file of its own; the
// slowest rank's median is the row's.
struct RanksOutcome {
  std::optional<ExchangeRow> row;  // when every rank reported
  std::string failure;             // else why not, in one line
  int stop_signal = 0;
};

RanksOutcome exchange_over_ranks(const Options& o, int n, const std::string& exchange) {
  const LaunchTicket ticket = new_launch_ticket("exchange");
  const std::string& base = ticket.json_path;  // each rank writes base.<rank>
  const std::vector<std::string> args = {
      "exchange-rank", "--exchange", exchange, "--device", std::to_string(o.common.device), "--timeout-s", std::to_string(o.timeout_s),
      "--iterations", std::to_string(o.allreduce.iterations), "--batches", std::to_string(o.allreduce.batches),
      "--warmup", std::to_string(o.allreduce.warmup), "--json", base};
  std::ostringstream log;
  const LaunchResult launch = launch_workers(self_path(), args, n, ticket.nccl_id_hex,
                                             LaunchBounds{o.timeout_s, launch_bound_s(o)}, log, Fault{},
                                             WorkerReports::discarded);
  RanksOutcome out;
  out.stop_signal = launch.stop_signal;
  ExchangeRow slowest;
  bool every_rank = true, all_correct = true;
  for (int r = 0; r < n; ++r) {
    const std::string path = base + "." + std::to_string(r);
    std::ifstream file(path);
    nlohmann::json j;
    try {
      if (file) file >> j;
    } catch (const nlohmann::json::exception&) {
      j = nullptr;
    }
    std::remove(path.c_str());
    const nlohmann::json* row = j.is_object() && j.contains("exchange_rank") ? &j["exchange_rank"] : nullptr;
    if (row == nullptr) {
      every_rank = false;
      continue;
    }
    ExchangeRow mine;
    mine.exchange = exchange;
    mine.used = row->value("used", exchange);
    mine.note = row->value("note", "");
    mine.launch = form_name(ExchangeForm::kGraphed);
    mine.gpus = n;
    mine.correct = (*row)["correct"].get<bool>();
    mine.time_us.median = (*row)["time_us"]["median"].get<double>();
    mine.time_us.min = (*row)["time_us"]["min"].get<double>();
    mine.time_us.max = (*row)["time_us"]["max"].get<double>();
    mine.time_us.count = (*row)["time_us"]["runs"].get<std::size_t>();
    all_correct = all_correct && mine.correct;
    if (r == 0 || mine.time_us.median > slowest.time_us.median) slowest = mine;
  }
  std::remove(base.c_str());
  if (launch.ok() && every_rank) {
    out.row = slowest;
    out.row->correct = all_correct;
  } else {
    out.failure = launch.first_failure ? describe_failure(launch) : "a rank wrote no result";
  }
  return out;
}

}  // namespace

// One rank of exchange_over_ranks, started by its launcher.
int run_exchange_rank(const Options& o) {
  const auto me = worker_identity_from_environment(&process_environment);
  if (!me) throw UsageError("exchange-rank is one rank of `multi_gpu_bench exchange`, which starts it");
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  CUDA_CHECK(cudaSetDevice(device_for_local_rank(me->local_rank, o.common.device, gpus.device_count)));
  // Before NCCL reads its environment (its first call, below): a user's own setting is kept.
  setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", /*overwrite=*/0);
  ControlChannel control(me->control_fd, me->heartbeat_fd);
  const Watch watch{o.timeout_s, &control, "rank " + std::to_string(me->rank)};
  Communicator comm = Communicator::init_rank(decode_unique_id(me->nccl_id_hex), me->world_size, me->rank, watch);
  const ExchangeKind kind = parse_exchange(o.exchange);
  const ExchangeRow row = kind == ExchangeKind::kOneShot
                              ? measure_one_shot_rank(comm, watch, me->rank, me->world_size, o.allreduce)
                              : measure_nccl_rank(comm, watch, me->rank, me->world_size, o.allreduce,
                                                  kind == ExchangeKind::kNcclSymmetric);
  comm.finalize(watch);
  const char* mixing = std::getenv("NCCL_GRAPH_MIXING_SUPPORT");
  Report report("multi_gpu_bench", o.common.json ? std::optional<std::string>(*o.common.json + "." +
                                                                              std::to_string(me->rank))
                                                 : std::nullopt);
  report.json()["exchange_rank"] = {{"rank", me->rank}, {"time_us", timing(row.time_us)}, {"correct", row.correct},
                                    {"used", row.used}, {"note", row.note},
                                    {"graph_mixing", mixing != nullptr ? mixing : ""}};
  report.check(row.correct, "exchange-rank: wrong sums");
  return report.finish();
}

namespace {

// One printed row of the exchange alone, and its JSON.
void exchange_alone_row(const ExchangeRow& r, const char* form, Report& report, nlohmann::json& rows) {
  report.out() << format("%6d%6s  %-16s%-16s%-12s%9.2f%9.2f%9.2f%6zu   %s\n", r.gpus, form, r.exchange.c_str(),
                         r.used.c_str(), r.launch.c_str(), r.time_us.median, r.time_us.min, r.time_us.max,
                         r.time_us.count, r.correct ? "exact" : "WRONG");
  if (!r.note.empty() && r.used != r.exchange) report.out() << "        " << r.note << "\n";
  report.check(r.correct, "exchange: " + r.exchange + " (" + form + ", " + r.launch + ") on " +
                              std::to_string(r.gpus) + " GPUs gave wrong sums");
  rows.push_back({{"gpus", r.gpus}, {"form", form}, {"launch", r.launch}, {"exchange", r.exchange},
                  {"used", r.used}, {"note", r.note}, {"time_us", timing(r.time_us)}, {"correct", r.correct}});
}

// Returns the signal that stopped one of its launches, 0 if none.
int run_exchange_alone(const Options& o, const std::vector<int>& devices, const std::vector<int>& counts,
                       Report& report) {
  std::ostream& out = report.out();
  out << "-- alone (GPU time per exchange: the slowest GPU's, " << median_of(o.allreduce.batches, "batch", "batches")
      << " of " << o.allreduce.iterations << "). dp: one process, each GPU's batch queued behind a latch; launch: launched (one "
      << "call per exchange), graph (the batch replayed as a CUDA graph), one_kernel (the batch inside one kernel); "
      << "exchange none: an empty kernel, the launch alone. ddp: one process per GPU, each rank replaying its graph: "
      << "one_shot (mailboxes over CUDA IPC) behind an all-reduce that lines the ranks up, NCCL (NCCL_GRAPH_MIXING_"
      << "SUPPORT=0) right behind one replay that does:\n"
      << "  GPUs  form  exchange        ran             launch       time us   min us   max us  runs   sums\n";
  nlohmann::json rows = nlohmann::json::array();
  struct Way {
    const char* exchange;  // the plug-in's name (exchange_alone.h)
    ExchangeForm form;
  };
  constexpr Way kWays[] = {{"nccl", ExchangeForm::kLaunched},     {"nccl_symmetric", ExchangeForm::kLaunched},
                           {"one_shot", ExchangeForm::kLaunched}, {"one_shot", ExchangeForm::kGraphed},
                           {"one_shot", ExchangeForm::kInOneKernel}, {"none", ExchangeForm::kGraphed}};
  for (int n : counts) {
    const std::vector<int> sub(devices.begin(), devices.begin() + n);
    for (const Way& way : kWays) {
      exchange_alone_row(measure_exchange(sub, way.exchange, way.form, o.allreduce, o.timeout_s), "dp", report, rows);
    }
  }
  for (int n : counts) {
    for (const char* exchange : {"one_shot", "nccl", "nccl_symmetric"}) {
      const RanksOutcome r = exchange_over_ranks(o, n, exchange);
      if (r.stop_signal != 0) {
        report.json()["exchange"]["alone"] = rows;
        report.check(false, "exchange: stopped by signal " + std::to_string(r.stop_signal));
        return r.stop_signal;
      }
      if (!r.row) {
        out << format("%6d   ddp  %-16sFAILED: %s\n", n, exchange, r.failure.c_str());
        report.check(false, std::string("exchange: ") + exchange + " over " + std::to_string(n) + " ranks: " + r.failure);
        continue;
      }
      exchange_alone_row(*r.row, "ddp", report, rows);
    }
  }
  report.json()["exchange"]["alone"] = rows;
  return 0;
}

// One epoch measurement: the slowest rank's time per epoch, what ran, whether it passed its checks.
struct EpochOutcome {
  double epoch_us = 0.0;
  bool ok = false;
  std::string used, why;
  int stop_signal = 0;
};

// The DataParallel analog in this process, checked: ranks bit-identical, and against one GPU where
// it fits.
EpochOutcome epoch_dp(const Options& o, const char* exchange, const regression::Config& c, const std::vector<int>& sub,
                      const std::optional<regression::TrainingResult>& single) {
  const ParallelRun run = training_way(exchange).train_dp(make_problem(c), sub, o.repeats, o.timeout_s);
  EpochOutcome r;
  r.epoch_us = run.slowest().epoch_us;
  r.used = run.exchange;
  r.ok = run.bit_identical() && (!single || check_against_single_gpu(run, *single).ok);
  return r;
}

// The DDP analog through the launcher, checked by rank 0 (against one GPU).
EpochOutcome epoch_ddp(const Options& o, const char* exchange, const regression::Config& c, int n) {
  Options q = o;
  q.exchange = exchange;
  q.fault_rank = -1;
  q.reference_max = 0;  // checked against one GPU, as the scaling runs
  std::ostringstream log;
  const LaunchOutcome launched = launch_ddp(q, c, n, log, WorkerReports::discarded);
  EpochOutcome r;
  r.stop_signal = launched.launch.stop_signal;
  r.ok = launched.launch.ok() && launched.rank0.is_object() && launched.rank0.value("passed", false);
  r.why = launch_failure(launched, log);
  r.epoch_us = slowest_epoch_us(launched.rank0);
  r.used = exchange;
  if (launched.rank0.is_object() && launched.rank0.contains("exchange")) {
    r.used = launched.rank0["exchange"].value("used", r.used);
  }
  return r;
}

// The epoch with each exchange, in both forms, beside the sums and step timed alone
// (compute_alone_us). Two measurements, never subtracted: their difference is no time of
// anything, and noise makes it negative where the exchange is short.
int run_exchange_epochs(const Options& o, const std::vector<int>& devices, const std::vector<int>& counts,
                        Report& report) {
  std::ostream& out = report.out();
  out << "-- in the epoch (time per epoch of the slowest rank, " << median_of(o.repeats, "run", "runs") << "):\n"
      << "       points  GPUs  mode  exchange          ran              epoch us  compute us  checked\n"
      << "  (compute us: the same sums and step timed alone, without the exchange; measured apart)\n";
  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t points : parse_point_list(o.exchange_points, "--exchange-points")) {
    const regression::Config c = training_config(o, points);
    std::string why_not;
    CUDA_CHECK(cudaSetDevice(devices.front()));
    const std::optional<regression::TrainingResult> single = single_gpu(c, &why_not);
    for (int n : counts) {
      const std::vector<int> sub(devices.begin(), devices.begin() + n);
      const double compute_us = compute_alone_us(c, n, o.common.device, o.repeats);
      for (const char* exchange : kExchanges) {
        for (const char* mode : {"dp", "ddp"}) {
          const bool dp = std::string(mode) == "dp";
          const EpochOutcome r = dp ? epoch_dp(o, exchange, c, sub, single) : epoch_ddp(o, exchange, c, n);
          if (r.stop_signal != 0) {
            report.check(false, "exchange: stopped by signal " + std::to_string(r.stop_signal));
            return r.stop_signal;
          }
          out << format("%13lld%6d%6s  %-18s%-14s%11.2f%12.2f%9s\n", static_cast<long long>(points), n, mode,
                        exchange, r.used.c_str(), r.epoch_us, compute_us, r.ok ? "ok" : "FAILED")
              << std::flush;
          report.check(r.ok, std::string("exchange: ") + mode + " --exchange " + exchange + " at " +
                                 std::to_string(points) + " points on " + std::to_string(n) + " GPUs failed" + r.why);
          rows.push_back({{"points", points}, {"gpus", n}, {"mode", mode}, {"exchange", exchange}, {"used", r.used},
                          {"us_per_epoch", r.epoch_us}, {"compute_us", compute_us}, {"passed", r.ok}});
        }
      }
    }
  }
  report.json()["exchange"]["epochs"] = rows;
  return 0;
}

// Chapter 05's fastest variant that reads the data from DRAM every epoch (every variant but
// on_chip) at `points`, from its sweep's JSON: nullopt when the sweep has no passed row there.
std::optional<nlohmann::json> one_gpu_best(const nlohmann::json& sweep, std::int64_t points) {
  std::optional<nlohmann::json> best;
  for (const auto& row : sweep.value("sweep", nlohmann::json::array())) {
    if (row.value("implementation", "") != "cuda" || row.value("variant", "") == "on_chip" ||
        row.value("points", std::int64_t{0}) != points || !row.value("passed", false)) {
      continue;
    }
    if (!best || row["us_per_epoch"].get<double>() < (*best)["us_per_epoch"].get<double>()) best = row;
  }
  return best;
}

nlohmann::json read_sweep(const std::string& path) {
  std::ifstream file(path);
  nlohmann::json j;
  try {
    file >> j;
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("--one-gpu-sweep " + path + ": not JSON (write it with fused_kernels_bench --sweep --json)");
  }
  if (!j.is_object() || !j.contains("sweep")) {
    throw std::runtime_error("--one-gpu-sweep " + path + ": no sweep rows (write it with fused_kernels_bench --sweep --json)");
  }
  return j;
}

// Training on the GPUs' chips (on_chip.cu) at each --on-chip-points size, on each GPU count (dp
// form: one process), checked as the epochs above; a size whose shard does not fit a GPU's room
// is skipped with the room's line. Then, beside each size, chapter 05's fastest DRAM-bound
// variant from --one-gpu-sweep (the same machine, the same run of benchmark.sh).
void run_exchange_on_chip(const Options& o, const std::vector<int>& devices, const std::vector<int>& counts,
                          Report& report) {
  std::ostream& out = report.out();
  CUDA_CHECK(cudaSetDevice(devices.front()));
  const fused::OnChipRoom room = on_chip_room();
  out << "-- on chip (every epoch in one launch per GPU, each shard kept in its GPU's registers and shared memory, the "
         "sums meeting by one_shot inside it; time per epoch of the slowest GPU, " << median_of(o.repeats, "run", "runs") << "); "
      << "GPU " << devices.front() << "'s room: " << room.capacity.blocks << " blocks hold "
      << fixed(room.capacity.bytes() / 1e6, 1) << " MB = " << room.capacity.points() << " training points\n"
      << "       points  GPUs  mode          train/GPU   epoch us  checked\n";
  report.json()["exchange"]["on_chip_room"] = {{"blocks", room.capacity.blocks}, {"bytes", room.capacity.bytes()},
                                               {"train_points", room.capacity.points()}};
  nlohmann::json& rows = report.json()["exchange"]["epochs"];
  nlohmann::json skipped = nlohmann::json::array();
  const std::optional<nlohmann::json> sweep =
      o.one_gpu_sweep.empty() ? std::nullopt : std::optional<nlohmann::json>(read_sweep(o.one_gpu_sweep));
  for (std::int64_t points : parse_point_list(o.on_chip_points, "--on-chip-points")) {
    const regression::Config c = training_config(o, points);
    const Problem problem = make_problem(c);
    std::string why_not;
    CUDA_CHECK(cudaSetDevice(devices.front()));
    const std::optional<regression::TrainingResult> single = single_gpu(c, &why_not);
    for (int n : counts) {
      const std::vector<int> sub(devices.begin(), devices.begin() + n);
      const std::int64_t per_gpu = shard_of(problem.train_points, n, 0).count;  // rank 0's: the largest
      std::optional<ParallelRun> run;
      try {
        run = train_by_hand(problem, sub, o.repeats, o.timeout_s, /*on_chip=*/true);
      } catch (const OnChipDoesNotFit& e) {
        out << format("%13lld%6d  on_chip       skipped: %s\n", static_cast<long long>(points), n, e.what());
        skipped.push_back({{"points", points}, {"gpus", n}, {"mode", "on_chip"}, {"skipped", e.what()}});
        continue;
      }
      const bool ok = run->bit_identical() && (!single || check_against_single_gpu(*run, *single).ok);
      const double epoch_us = run->slowest().epoch_us;
      out << format("%13lld%6d  on_chip   %13lld%11.2f%9s\n", static_cast<long long>(points), n,
                    static_cast<long long>(per_gpu), epoch_us, ok ? "ok" : "FAILED")
          << std::flush;
      report.check(ok, "exchange: on_chip at " + std::to_string(points) + " points on " + std::to_string(n) +
                           " GPUs failed");
      rows.push_back({{"points", points}, {"gpus", n}, {"mode", "on_chip"}, {"exchange", "one_shot"},
                      {"used", run->exchange}, {"train_points_per_gpu", per_gpu}, {"us_per_epoch", epoch_us},
                      {"passed", ok}});
    }
    if (!sweep) continue;
    const std::optional<nlohmann::json> best = one_gpu_best(*sweep, points);
    if (!best) {
      out << format("%13lld     1  one_gpu_best  no passed DRAM-bound row in %s\n", static_cast<long long>(points),
                    o.one_gpu_sweep.c_str());
      continue;
    }
    const double us = (*best)["us_per_epoch"].get<double>();
    out << format("%13lld%6d  one_gpu_best%12lld%11.2f       ok  (05's %s)\n", static_cast<long long>(points), 1,
                  static_cast<long long>((*best)["train_points"].get<std::int64_t>()), us,
                  (*best)["variant"].get<std::string>().c_str());
    rows.push_back({{"points", points}, {"gpus", 1}, {"mode", "one_gpu_best"}, {"exchange", "none"},
                    {"used", (*best)["variant"]}, {"us_per_epoch", us}, {"passed", true},
                    {"source", o.one_gpu_sweep}, {"device", sweep->value("device", "")}});
  }
  report.json()["exchange"]["on_chip_skipped"] = skipped;
}

}  // namespace

int run_exchange(const BenchOptions& o, const std::vector<int>& devices, Report& report) {
  const std::vector<int> counts =
      usable_gpu_counts(parse_int_list(o.gpu_counts, "--gpu-counts"), static_cast<int>(devices.size()));
  report.out() << "== exchange: the epoch's 12 bytes (3 floats summed over the GPUs) three ways: nccl (ncclAllReduce), "
                  "nccl_symmetric (the same on symmetric windows), one_shot (by hand: a slot in every GPU's mailbox); "
               << counts.size() << " GPU count" << (counts.size() == 1 ? "" : "s") << "\n"
               << "multicast off: " << forced_environment_text() << "\n";
  report.json()["exchange"] = {{"gpu_counts", counts}, {"iterations", o.allreduce.iterations},
                               {"batches", o.allreduce.batches}, {"repeats", o.repeats},
                               {"environment", forced_environment_json()}};
  if (const int stop_signal = run_exchange_alone(o, devices, counts, report)) return stop_signal;
  if (const int stop_signal = run_exchange_epochs(o, devices, counts, report)) return stop_signal;
  run_exchange_on_chip(o, devices, counts, report);
  return 0;
}

}  // namespace workbook::multi_gpu

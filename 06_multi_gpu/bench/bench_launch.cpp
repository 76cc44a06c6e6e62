// bench_launch.cpp: multi_gpu_bench's ddp and scaling parts, and the launches of the lesson's
// ranks they share with the exchange part (bench_parts.h).
#include "bench_parts.h"

#include "bench_plan.h"
#include "bench/training_ways.h"
#include "cuda_check.h"
#include "event_timer.h"
#include "format.h"
#include "gpu_probe.h"
#include "multi_gpu.h"
#include "nccl_check.h"
#include "support/nccl_comm.h"
#include "nvtx.h"
#include "support/rank_environment.h"
#include "stream.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// Asks every device of the run for `need` before anything is allocated on any of them.
void require_memory_on_each(const std::vector<int>& devices, const std::string& what, const ByteCount& need) {
  for (int d : devices) {
    CUDA_CHECK(cudaSetDevice(d));
    require_gpu_memory(what, need);
  }
  CUDA_CHECK(cudaSetDevice(devices.front()));
}

std::string fixed(double v, int digits) { return format("%.*f", digits, v); }

// The multicast-off variables as this process has them (main set them; see launcher.h).
nlohmann::json forced_environment_json() {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : forced_environment()) {
    const char* now = std::getenv(name.c_str());
    j[name] = now ? nlohmann::json(now) : nlohmann::json(nullptr);
  }
  return j;
}

// The whole-run bound of a launch: --launch-timeout-s, or 10x --timeout-s.
double launch_bound_s(const BenchOptions& o) { return o.launch_timeout_s > 0 ? o.launch_timeout_s : 10.0 * o.timeout_s; }

// ---------------------------------------------------------------------------------------------
// training: the common report of a dp or ddp run

regression::Config training_config(const BenchOptions& o, std::int64_t points) {
  regression::Config c = o.config;
  c.points = points;
  c.lr = effective_lr(o.lr, points);
  return c;
}

// ---------------------------------------------------------------------------------------------
// ddp: the launcher, its workers (a lesson program's `ddp`), and the epoch's split

namespace {

// What the launcher starts for each rank: the program of the way of --exchange (training_ways.h)
// beside this one, its first arguments, the training flags of this run, and --json to a file the
// launcher reads back (rank 0 writes it).
struct RankCommand {
  std::string program;
  std::vector<std::string> args;
};

RankCommand rank_command(const BenchOptions& o, const regression::Config& c, const std::string& json) {
  const std::string exchange = o.on_chip ? "one_shot" : o.exchange;
  const TrainingWay& way = training_way(exchange);
  const std::string self = self_path();
  RankCommand r{self.substr(0, self.rfind('/') + 1) + way.rank_program, way.rank_command};
  if (access(r.program.c_str(), X_OK) != 0) throw std::runtime_error(r.program + ": the lesson program is not there: build it");
  r.args.insert(r.args.end(), {"--device", std::to_string(o.common.device), "--points", std::to_string(c.points),
                               "--epochs", std::to_string(c.epochs), "--lr", format("%.17g", c.lr),
                               "--noise", format("%.17g", c.noise), "--repeats", std::to_string(o.repeats),
                               "--timeout-s", std::to_string(o.timeout_s), "--reference-max",
                               std::to_string(o.reference_max), "--json", json});
  if (c.noise > 0.0) r.args.insert(r.args.end(), {"--seed", std::to_string(c.seed)});  // else a rank refuses it
  if (o.nccl_nonblocking) r.args.emplace_back("--nccl-nonblocking");
  if (o.on_chip) r.args.emplace_back("--on-chip");
  return r;
}

}  // namespace

// The epoch without its all-reduce: rank 0's shard (the largest) alone on `device`, sums and
// step only, timed as the training loop is (CUDA events around every epoch of a run, median of
// `repeats` runs after one). A measurement of its own, beside the epoch's: the two are never
// subtracted into a time of the all-reduce (timed apart, they differ by noise either way, and the
// one-shot epoch, one kernel, can take less than these two kernels).
double compute_alone_us(const regression::Config& c, int ranks, int device, int repeats) {
  NvtxRange range("compute alone");
  CUDA_CHECK(cudaSetDevice(device));
  const Problem p = make_problem(c);
  const Shard train = shard_of(p.train_points, ranks, 0), test = shard_of(p.test_points, ranks, 0, p.train_points);
  require_gpu_memory("--points " + std::to_string(c.points) + " (rank 0's shard of " + std::to_string(ranks) + ")",
                     Replica::bytes_needed(p, train, test));
  Stream stream;
  Replica replica(p, train, test, stream.get());
  const Stats t = time_on_stream(stream.get(), {1, repeats}, [&] {
    replica.enqueue_reset();
    for (int e = 0; e < c.epochs; ++e) {
      replica.enqueue_sums();
      replica.enqueue_step(e);
    }
  });
  return 1e3 * t.median / c.epochs;
}

// The slowest rank's time per epoch in rank 0's report (0 when there is none).
double slowest_epoch_us(const nlohmann::json& rank0) {
  double us = 0.0;
  if (rank0.is_object() && rank0.contains("ranks")) {
    for (const auto& r : rank0["ranks"]) us = std::max(us, r.value("epoch_us", 0.0));
  }
  return us;
}


// `reports`: the sweeps (scaling, exchange) read rank 0's JSON and print a row, so they discard the
// ranks' reports; a single `ddp --nproc N` shows them.
// What every launch of ranks needs first: a file name for the ranks' JSON (a new empty file in
// /tmp, named after `what`) and NCCL's unique id, as hex. This process hosts the id's bootstrap
// root until the ranks are done.
LaunchTicket new_launch_ticket(const std::string& what) {
  std::string pattern = "/tmp/multi_gpu_" + what + "_XXXXXX.json";  // --json takes .json files only
  const int fd = mkstemps(pattern.data(), 5);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file in /tmp");
  close(fd);
  require_forced_environment();
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  return {pattern, encode_unique_id(id)};
}

LaunchOutcome launch_ddp(const BenchOptions& o, const regression::Config& c, int nproc, std::ostream& log,
                         WorkerReports reports) {
  const LaunchTicket ticket = new_launch_ticket("ddp");
  const std::string& json_path = ticket.json_path;
  LaunchOutcome r;
  const RankCommand command = rank_command(o, c, json_path);
  r.launch = launch_workers(command.program, command.args, nproc, ticket.nccl_id_hex,
                            LaunchBounds{o.timeout_s, launch_bound_s(o)}, log, Fault{o.fault_rank, fault_signal_number(o.fault_signal), o.fault_after_s},
                            reports);
  std::ifstream file(json_path);
  if (file && file.peek() != std::ifstream::traits_type::eof()) {
    try {
      file >> r.rank0;
    } catch (const nlohmann::json::exception&) {
      r.rank0 = nullptr;
    }
  }
  std::remove(json_path.c_str());
  return r;
}

// Why a sweep's launch did not pass, after ": " (empty when it passed). The ranks' own reports were
// discarded, so a check that failed is read from rank 0's JSON (it then exits 1, so the launch
// failed too); otherwise the launcher's log says which rank failed and how.
std::string launch_failure(const LaunchOutcome& r, const std::ostringstream& log) {
  if (r.rank0.is_object() && !r.rank0.value("passed", false)) {
    const auto f = r.rank0.find("failures");
    if (f != r.rank0.end() && f->is_array() && !f->empty()) return ": " + f->front().get<std::string>();
  }
  if (!r.launch.ok()) return ": " + log.str();
  return r.rank0.is_object() ? "" : ": rank 0 wrote no report";
}

// Returns the signal that stopped the launch (rank_environment.h), 0 if none.
int run_ddp_launcher(const BenchOptions& o, const std::vector<int>& devices, Report& report) {
  const int nproc = o.nproc > 0 ? o.nproc : static_cast<int>(devices.size());
  const int available = probe_gpus().device_count - o.common.device;
  if (nproc > available) {
    throw NoGpuError("--nproc " + std::to_string(nproc) + " needs one GPU per rank from --device " +
                     std::to_string(o.common.device) + "; this machine has " + std::to_string(probe_gpus().device_count));
  }
  const regression::Config c = training_config(o, o.config.points);
  // Rank 0's shard, asked here on its GPU (where this process already is) so that a size that does
  // not fit is one line; every rank asks again for its own shard before allocating it.
  const Problem problem = make_problem(c);
  require_gpu_memory("--points " + std::to_string(c.points) + " (rank 0's shard of " + std::to_string(nproc) + ")",
                     Replica::bytes_needed(problem, shard_of(problem.train_points, nproc, 0),
                                           shard_of(problem.test_points, nproc, 0, problem.train_points)));
  std::ostream& out = report.out();
  out << "== ddp: DistributedDataParallel analog: " << nproc << " rank" << (nproc == 1 ? "" : "s")
      << " (one process per GPU, built-in launcher); " << c.points << " points, " << c.epochs << " epochs, lr " << c.lr
      << (o.exchange != "nccl" ? "; --exchange " + o.exchange : std::string())
      << "\nmulticast off (every rank sets it in main before any NCCL call): " << forced_environment_text() << "\n"
      << std::flush;
  const LaunchOutcome r = launch_ddp(o, c, nproc, out);
  if (o.fault_rank >= 0 && !r.launch.fault_sent) {  // a fault asked for must have happened
    report.check(false, "ddp: --fault-rank " + std::to_string(o.fault_rank) + ": rank " + std::to_string(o.fault_rank) +
                            " ended (or never beat) before the fault was due: give the run more --repeats");
  }
  nlohmann::json j = {{"rank0", r.rank0}};
  nlohmann::json exits = nlohmann::json::array();
  for (const ChildExit& e : r.launch.exits) {
    exits.push_back({{"rank", e.rank}, {"pid", e.pid}, {"status", e.status}, {"signaled", e.signaled},
                     {"killed", e.killed}, {"stopped", e.stopped}, {"seconds", e.seconds}});
  }
  j["launcher"] = {{"nproc", nproc}, {"exits", exits}, {"timeout_s", o.timeout_s},
                   {"launch_timeout_s", launch_bound_s(o)}, {"timed_out", r.launch.timed_out},
                   {"still_running", r.launch.still_running}, {"stop_signal", r.launch.stop_signal}};
  if (r.launch.unresponsive) j["launcher"]["unresponsive_rank"] = r.launch.unresponsive->rank;
  j["environment"] = forced_environment_json();
  if (r.launch.stop_signal != 0) {
    const std::string how = "stopped by signal " + std::to_string(r.launch.stop_signal) + " (" +
                            strsignal(r.launch.stop_signal) + ")";
    out << "launcher: " << how << ", forwarded to every rank; all " << nproc << " ranks are gone\n";
    report.check(false, "ddp: " + how);
  } else if (r.launch.timed_out && !r.launch.first_failure) {
    std::string ranks;
    for (int rank : r.launch.still_running) ranks += " " + std::to_string(rank);
    const std::string quiet = r.launch.unresponsive ? "; rank " + std::to_string(r.launch.unresponsive->rank) +
                                                          " stopped responding (" + r.launch.unresponsive->how + ")"
                                                    : std::string();
    out << "launcher: no rank failed, but ranks" << ranks << " were still running after the whole-run bound of "
        << launch_bound_s(o) << " s (--launch-timeout-s): killed" << quiet << "\n";
    report.check(false, "ddp: ranks" + ranks + " still running after " + fixed(launch_bound_s(o), 0) +
                            " s (--launch-timeout-s): killed" + quiet);
  } else if (r.launch.first_failure) {
    const ChildExit& f = *r.launch.first_failure;
    double last = 0.0;
    for (const ChildExit& e : r.launch.exits) last = std::max(last, e.seconds);
    out << "launcher: " << describe_failure(r.launch) << "; every rank stopped " << fixed(last - f.seconds, 2)
        << " s after it (a rank still running " << o.timeout_s << " s after a failure, --timeout-s, is killed)\n";
    j["launcher"]["failed_rank"] = blamed_rank(r.launch);
    j["launcher"]["first_exit_rank"] = f.rank;
    j["launcher"]["stopped_after_s"] = last - f.seconds;
    report.check(false, "ddp: " + describe_failure(r.launch));
  } else {
    out << "launcher: all " << nproc << " ranks exited 0\n";
    const bool passed = r.rank0.is_object() && r.rank0.value("passed", false);
    report.check(passed, "ddp: rank 0 reported a failed check");
    if (passed) {  // the epoch, and beside it the same work timed alone: two measurements, each a time
      // (their difference is no time of the all-reduce: the two are timed apart, and can differ by
      // more than the exchange costs, either way; so it is neither printed nor written)
      const double epoch_us = slowest_epoch_us(r.rank0);
      const double compute_us = compute_alone_us(c, nproc, o.common.device, o.repeats);
      out << format("epoch %.2f us (slowest rank); the same sums and step timed alone on GPU %d: %.2f us\n", epoch_us,
                    o.common.device, compute_us);
      j["us_per_epoch"] = epoch_us;
      j["compute_us"] = compute_us;
    }
  }
  report.json()["ddp"] = j;
  return r.launch.stop_signal;
}

// ---------------------------------------------------------------------------------------------
// scaling

namespace {

struct ScalingCase {
  std::string kind;                  // strong (total points) or weak (points per GPU)
  std::int64_t per_gpu_or_total = 0;
};

// One scaling launch: `n` ranks exchanging by `o.exchange`. ok is false when the launch or a check
// failed (the report says why); stop_signal is the signal that stopped it, 0 if none.
struct ScalingRow {
  regression::Config config;
  std::string used;  // the exchange the ranks ran (NCCL may decline symmetric windows: then nccl)
  double us = 0.0, compute_us = 0.0;
  bool ok = false;
  int stop_signal = 0;
};

ScalingRow scaling_row(const BenchOptions& o, const ScalingCase& k, int n, Report& report) {
  const std::int64_t points = k.kind == "strong" ? k.per_gpu_or_total : k.per_gpu_or_total * n;
  ScalingRow row;
  row.config = training_config(o, points);
  const regression::Config& c = row.config;
  std::ostringstream log;
  const LaunchOutcome r = launch_ddp(o, c, n, log, WorkerReports::discarded);
  row.stop_signal = r.launch.stop_signal;
  if (row.stop_signal != 0) return row;
  row.ok = r.launch.ok() && r.rank0.is_object() && r.rank0.value("passed", false);
  report.check(row.ok, "scaling: " + o.exchange + ", " + k.kind + " " + std::to_string(points) + " points on " +
                           std::to_string(n) + " GPUs failed" + launch_failure(r, log));
  row.us = slowest_epoch_us(r.rank0);
  row.used = r.rank0.is_object() && r.rank0.contains("exchange") ? r.rank0["exchange"].value("used", o.exchange) : o.exchange;
  row.compute_us = row.ok ? compute_alone_us(c, n, o.common.device, o.repeats) : 0.0;
  return row;
}

}  // namespace

// Returns the signal that stopped one of its launches (the rest are not run), 0 if none.
int run_scaling(const BenchOptions& o, const std::vector<int>& devices, Report& report) {
  std::ostream& out = report.out();
  const std::vector<int> counts = usable_gpu_counts(parse_int_list(o.gpu_counts, "--gpu-counts"), static_cast<int>(devices.size()));
  out << "== scaling: DDP ranks (built-in launcher) over " << counts.size() << " GPU count"
      << (counts.size() == 1 ? "" : "s") << ", each exchange in turn; time per epoch of the slowest rank, "
      << median_of(o.repeats, "run", "runs") << "; efficiency against the same exchange on 1 GPU: strong t1 / (n tn), weak t1 / tn; "
      << "compute us: the same sums and step timed alone on rank 0's shard\n"
      << "  exchange        kind         points     per GPU  GPUs   epoch us  compute us  efficiency  checked\n";
  std::vector<ScalingCase> cases;
  for (std::int64_t p : parse_point_list(o.strong, "--strong")) cases.push_back({"strong", p});
  for (std::int64_t p : parse_point_list(o.weak, "--weak")) cases.push_back({"weak", p});
  nlohmann::json rows = nlohmann::json::array();
  BenchOptions quiet = o;
  quiet.fault_rank = -1;
  quiet.reference_max = 0;  // scaling runs check bit-identity and one GPU, not the slow CPU reference
  for (const std::string& exchange : o.scaling_exchanges) {
    quiet.exchange = exchange;
    for (const ScalingCase& k : cases) {
      double t1 = 0.0;  // the 1-GPU epoch, when 1 is among the counts
      for (int n : counts) {
        const ScalingRow row = scaling_row(quiet, k, n, report);
        if (row.stop_signal != 0) {
          report.check(false, "scaling: stopped by signal " + std::to_string(row.stop_signal));
          return row.stop_signal;
        }
        if (n == 1 && row.ok) t1 = row.us;
        const std::int64_t points = row.config.points;
        const double eff = t1 <= 0 ? 0.0 : k.kind == "strong" ? strong_efficiency(t1, row.us, n) : weak_efficiency(t1, row.us);
        // A row as each launch ends (a sweep takes minutes): format, not a Table printed at the end.
        out << format("  %-16s%-7s%13lld%12lld%6d%11.2f%12.2f%12s%9s\n", exchange.c_str(), k.kind.c_str(),
                      static_cast<long long>(points), static_cast<long long>(points / n), n, row.us, row.compute_us,
                      t1 > 0 ? (fixed(100.0 * eff, 1) + "%").c_str() : "-", row.ok ? "ok" : "FAILED")
            << std::flush;
        rows.push_back({{"exchange", exchange}, {"used", row.used}, {"kind", k.kind}, {"points", points}, {"points_per_gpu", points / n},
                        {"gpus", n}, {"lr", row.config.lr}, {"epochs", row.config.epochs},
                        {"us_per_epoch", row.us}, {"compute_us", row.compute_us},
                        {"efficiency", eff}, {"passed", row.ok}});
      }
    }
  }
  report.json()["scaling"] = {{"gpu_counts", counts}, {"exchanges", o.scaling_exchanges}, {"rows", rows},
                              {"repeats", o.repeats}};
  return 0;
}

}  // namespace workbook::multi_gpu

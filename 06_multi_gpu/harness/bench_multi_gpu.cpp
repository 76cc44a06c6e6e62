// bench_multi_gpu.cpp: chapter 06's measuring harness, beside the lesson (replica.cu,
// multi_gpu.cu, ddp.cu, one_shot_exchange.cu), whose replica and training loops it links: what the GPUs can move between them, what an all-reduce
// costs, the DDP analog started by a launcher of its own (what torchrun does for one node) with
// a fault injected on demand, strong and weak scaling, and the epoch's exchange done three ways.
//
//   multi_gpu_bench                              # everything: topology, allreduce, ddp, scaling
//   multi_gpu_bench topology | allreduce | ddp | exchange | scaling   # one part
//   multi_gpu_bench ddp --nproc 2 --fault-rank 1   # the launcher kills rank 1 as it trains; the others stop
//   multi_gpu_bench ddp --nproc 2 --exchange one_shot            # the ranks exchange by hand
//   multi_gpu_bench --quick --gpus 1             # what the tests and compute-sanitizer run
//
// The DDP ranks are the lesson's own program, `multi_gpu ddp`, one per GPU (the launcher finds it
// beside this program); each learns its rank from the environment the launcher gives it.
#include "cli.h"
#include "format.h"
#include "gpu_probe.h"
#include "launcher.h"
#include "measure.h"
#include "multi_gpu.h"
#include "nccl_check.h"
#include "nccl_comm.h"
#include "nvtx.h"
#include "bench_options.h"
#include "bench_plan.h"
#include "program.h"
#include "provenance.h"
#include "rank_environment.h"
#include "regression_cli.h"
#include "regression_problem.h"
#include "report.h"
#include "stream.h"
#include "stop_signals.h"
#include "table.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

namespace workbook::multi_gpu {
namespace {

using Options = BenchOptions;

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
double launch_bound_s(const Options& o) { return o.launch_timeout_s > 0 ? o.launch_timeout_s : 10.0 * o.timeout_s; }

// ---------------------------------------------------------------------------------------------
// topology

void run_topology(const Options& o, const std::vector<int>& devices, Report& report) {
  std::ostream& out = report.out();
  const std::size_t bytes = static_cast<std::size_t>(o.copy_mib) << 20;
  require_memory_on_each(devices, "--copy-mib " + std::to_string(o.copy_mib), ByteCount().add(o.copy_mib, 1 << 20, 2));
  const Topology t = measure_topology(devices, bytes, o.common.quick ? Repeats{1, 3} : Repeats{2, 10});
  out << "== topology: " << devices.size() << " GPU" << (devices.size() == 1 ? "" : "s") << "\n";
  for (std::size_t i = 0; i < devices.size(); ++i) out << "  GPU " << devices[i] << ": " << t.names[i] << "\n";
  out << "peer access (cudaDeviceCanAccessPeer, row can read/write column):\n       ";
  for (int d : devices) out << format("%6d", d);
  out << "\n";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    out << format("  %5d", devices[i]);
    for (std::size_t j = 0; j < devices.size(); ++j) out << format("%6s", i == j ? "-" : t.can_access[i][j] ? "yes" : "no");
    out << "\n";
  }
  nlohmann::json links = nlohmann::json::array();
  if (t.links.empty()) {
    out << "one GPU: no pairs to measure\n";
  } else {
    out << "peer copies of " << format_bytes(bytes) << " (cudaMemcpyPeerAsync, median; GB/s = 1e9 B/s; bidirectional "
        << "counts both copies; peer access off, then on; - where it cannot be on):\n";
    Table printed({{"pair", "pair"}, {"rank", "rank"}, {"one_way_off", "one-way off", 1}, {"one_way_on", "one-way on", 1},
                   {"both_off", "both off", 1}, {"both_on", "both on", 1}, {"latency_off", "latency off us", 2},
                   {"latency_on", "latency on us", 2}});
    for (const PeerLink& l : t.links) {
      auto on = [&](double v) { return l.can_access ? nlohmann::json(v) : nlohmann::json("-"); };
      printed.add_row().set("pair", format("%d -> %d", l.from, l.to)).set("rank", l.performance_rank)
          .set("one_way_off", l.one_way_gbps[0]).set("one_way_on", on(l.one_way_gbps[1]))
          .set("both_off", l.bidirectional_gbps[0]).set("both_on", on(l.bidirectional_gbps[1]))
          .set("latency_off", l.latency_us[0]).set("latency_on", on(l.latency_us[1]));
      links.push_back({{"from", l.from}, {"to", l.to}, {"can_access", l.can_access},
                       {"performance_rank", l.performance_rank}, {"native_atomics", l.native_atomics},
                       {"one_way_gbps", {{"off", l.one_way_gbps[0]}, {"on", l.one_way_gbps[1]}}},
                       {"bidirectional_gbps", {{"off", l.bidirectional_gbps[0]}, {"on", l.bidirectional_gbps[1]}}},
                       {"latency_us", {{"off", l.latency_us[0]}, {"on", l.latency_us[1]}}}});
    }
    printed.print(out);
  }
  report.json()["topology"] = {{"devices", devices}, {"names", t.names}, {"can_access", t.can_access},
                               {"bytes", bytes}, {"links", links}};
}

// ---------------------------------------------------------------------------------------------
// allreduce

void run_allreduce(const Options& o, const std::vector<int>& devices, Report& report) {
  std::ostream& out = report.out();
  const std::vector<std::size_t> sizes = allreduce_sizes(static_cast<std::size_t>(o.min_bytes),
                                                         static_cast<std::size_t>(o.max_bytes), o.factor);
  const int n = static_cast<int>(devices.size());
  require_memory_on_each(devices, "--max-bytes " + std::to_string(o.max_bytes), ByteCount().add(o.max_bytes, 1, 2));
  out << "== allreduce: NCCL " << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH << " (headers), " << n
      << " GPU" << (n == 1 ? "" : "s") << " in one process, float sum, out of place; "
      << o.allreduce.iterations << " back-to-back per batch after " << o.allreduce.warmup << " warm-up, median of "
      << o.allreduce.batches << " batches; busbw = algbw * 2(n-1)/n = algbw * " << fixed(bus_factor(n), 2) << "\n";
  out << "multicast off (set by main before any NCCL call): " << forced_environment_text() << "\n";
  const std::vector<AllreduceRow> rows = measure_allreduce(devices, sizes, o.allreduce);
  Table table({{"size", "size"}, {"bytes", ""}, {"time_us", "time us", 2, Column::Style::kTiming},
               {"algbw_gbps", "algbw GB/s", 2}, {"busbw_gbps", "busbw GB/s", 2}, {"wrong", "wrong"}});
  unsigned long long wrong = 0;
  for (const AllreduceRow& r : rows) {
    wrong += r.wrong;
    table.add_row().set("size", format_bytes(r.bytes)).set("bytes", r.bytes).set("time_us", timing(r.time_us))
        .set("algbw_gbps", r.algbw_gbps).set("busbw_gbps", r.busbw_gbps).set("wrong", r.wrong);
  }
  table.print(out);
  report.check(wrong == 0, "all-reduce: " + std::to_string(wrong) + " wrong elements");
  report.json()["allreduce"] = {{"gpus", n}, {"nccl_version", std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH)},
                                {"iterations", o.allreduce.iterations}, {"batches", o.allreduce.batches},
                                {"warmup", o.allreduce.warmup}, {"rows", table.json()}, {"wrong", wrong},
                                {"environment", forced_environment_json()}};
}

// ---------------------------------------------------------------------------------------------
// training: the common report of a dp or ddp run

regression::Config training_config(const Options& o, std::int64_t points) {
  regression::Config c = o.config;
  c.points = points;
  c.lr = effective_lr(o.lr, points);
  return c;
}

// ---------------------------------------------------------------------------------------------
// ddp: the launcher, its workers (the lesson program's `multi_gpu ddp`), and the epoch's split

// The arguments each worker gets: the training flags of this run, --json to a file the launcher
// reads back (rank 0 writes it).
std::vector<std::string> worker_arguments(const Options& o, const regression::Config& c, const std::string& json) {
  std::vector<std::string> a = {"ddp", "--device", std::to_string(o.common.device), "--points", std::to_string(c.points),
                                "--epochs", std::to_string(c.epochs), "--lr", format("%.17g", c.lr),
                                "--noise", format("%.17g", c.noise), "--seed", std::to_string(c.seed),
                                "--repeats", std::to_string(o.repeats), "--timeout-s", std::to_string(o.timeout_s),
                                "--reference-max", std::to_string(o.reference_max), "--json", json};
  if (o.nccl_nonblocking) a.emplace_back("--nccl-nonblocking");
  if (o.exchange != "nccl") a.insert(a.end(), {"--exchange", o.exchange});
  if (o.on_chip) a.emplace_back("--on-chip");
  return a;
}

// The lesson's program, `multi_gpu`, beside this one: what the launcher starts for each rank.
std::string lesson_program() {
  const std::string self = self_path();
  const std::string path = self.substr(0, self.rfind('/') + 1) + "multi_gpu";
  if (access(path.c_str(), X_OK) != 0) throw std::runtime_error(path + ": the lesson program is not there: build it");
  return path;
}

// The epoch without its all-reduce: rank 0's shard (the largest) alone on `device`, sums and
// step only, timed as the training loop is (CUDA events around every epoch of a run, median of
// `repeats` runs after one). What a DDP epoch takes beyond this is the all-reduce and the waiting
// around it.
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

struct LaunchOutcome {
  LaunchResult launch;
  nlohmann::json rank0;  // rank 0's JSON, or null
};

// `reports`: the sweeps (scaling, exchange) read rank 0's JSON and print a row, so they discard the
// ranks' reports; a single `ddp --nproc N` shows them.
// What every launch of ranks needs first: a file name for the ranks' JSON (a new empty file in
// /tmp, named after `what`) and NCCL's unique id, as hex. This process hosts the id's bootstrap
// root until the ranks are done.
struct LaunchTicket {
  std::string json_path;
  std::string nccl_id_hex;
};
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

LaunchOutcome launch_ddp(const Options& o, const regression::Config& c, int nproc, std::ostream& log,
                         WorkerReports reports = WorkerReports::to_stderr) {
  const LaunchTicket ticket = new_launch_ticket("ddp");
  const std::string& json_path = ticket.json_path;
  LaunchOutcome r;
  r.launch = launch_workers(lesson_program(), worker_arguments(o, c, json_path), nproc, ticket.nccl_id_hex,
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
int run_ddp_launcher(const Options& o, const std::vector<int>& devices, Report& report) {
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
    if (passed) {  // where the epoch goes: the work alone, and the all-reduce with its waiting
      const double epoch_us = slowest_epoch_us(r.rank0);
      const double compute_us = compute_alone_us(c, nproc, o.common.device, o.repeats);
      out << format("epoch %.2f us (slowest rank); the same sums and step alone on GPU %d: %.2f us; the all-reduce "
                    "and its waiting: %.2f us\n", epoch_us, o.common.device, compute_us, epoch_us - compute_us);
      j["us_per_epoch"] = epoch_us;
      j["compute_us"] = compute_us;
      j["allreduce_us"] = epoch_us - compute_us;
    }
  }
  report.json()["ddp"] = j;
  return r.launch.stop_signal;
}

// ---------------------------------------------------------------------------------------------
// scaling

// Returns the signal that stopped one of its launches (the rest are not run), 0 if none.
int run_scaling(const Options& o, const std::vector<int>& devices, Report& report) {
  std::ostream& out = report.out();
  const std::vector<int> counts = usable_gpu_counts(parse_int_list(o.gpu_counts, "--gpu-counts"), static_cast<int>(devices.size()));
  out << "== scaling: DDP ranks (built-in launcher) over " << counts.size() << " GPU count"
      << (counts.size() == 1 ? "" : "s") << "; time per epoch of the slowest rank, median of " << o.repeats
      << " runs; efficiency: strong t1 / (n tn), weak t1 / tn\n"
      << "  kind         points     per GPU  GPUs   epoch us  compute us  all-reduce us  efficiency  checked\n";
  struct Case {
    std::string kind;
    std::int64_t per_gpu_or_total;
  };
  std::vector<Case> cases;
  for (std::int64_t p : parse_point_list(o.strong, "--strong")) cases.push_back({"strong", p});
  for (std::int64_t p : parse_point_list(o.weak, "--weak")) cases.push_back({"weak", p});
  nlohmann::json rows = nlohmann::json::array();
  Options quiet = o;
  quiet.fault_rank = -1;
  quiet.reference_max = 0;  // scaling runs check bit-identity and one GPU, not the slow CPU reference
  for (const Case& k : cases) {
    double t1 = 0.0;
    for (int n : counts) {
      const std::int64_t points = k.kind == "strong" ? k.per_gpu_or_total : k.per_gpu_or_total * n;
      const regression::Config c = training_config(o, points);
      std::ostringstream log;
      const LaunchOutcome r = launch_ddp(quiet, c, n, log, WorkerReports::discarded);
      if (r.launch.stop_signal != 0) {
        report.check(false, "scaling: stopped by signal " + std::to_string(r.launch.stop_signal));
        return r.launch.stop_signal;
      }
      const bool ok = r.launch.ok() && r.rank0.is_object() && r.rank0.value("passed", false);
      report.check(ok, "scaling: " + k.kind + " " + std::to_string(points) + " points on " + std::to_string(n) +
                           " GPUs failed" + launch_failure(r, log));
      const double us = slowest_epoch_us(r.rank0);
      const double compute_us = ok ? compute_alone_us(c, n, o.common.device, o.repeats) : 0.0;
      if (n == counts.front()) t1 = counts.front() == 1 ? us : 0.0;
      const double eff = t1 > 0 ? (k.kind == "strong" ? strong_efficiency(t1, us, n) : weak_efficiency(t1, us)) : 0.0;
      // A row as each launch ends (a sweep takes minutes): format, not a Table printed at the end.
      out << format("  %-7s%13lld%12lld%6d%11.2f%12.2f%15.2f%11s%9s\n", k.kind.c_str(), static_cast<long long>(points),
                    static_cast<long long>(points / n), n, us, compute_us, us - compute_us,
                    t1 > 0 ? (fixed(100.0 * eff, 1) + "%").c_str() : "-", ok ? "ok" : "FAILED")
          << std::flush;
      rows.push_back({{"kind", k.kind}, {"points", points}, {"points_per_gpu", points / n}, {"gpus", n},
                      {"lr", c.lr}, {"epochs", c.epochs}, {"us_per_epoch", us}, {"compute_us", compute_us},
                      {"allreduce_us", us - compute_us}, {"efficiency", eff}, {"passed", ok}});
    }
  }
  report.json()["scaling"] = {{"gpu_counts", counts}, {"rows", rows}, {"repeats", o.repeats}};
  return 0;
}

// ---------------------------------------------------------------------------------------------
// exchange: the epoch's 12 bytes the three ways of --exchange, alone and inside the epoch

constexpr ExchangeKind kExchanges[] = {ExchangeKind::kNccl, ExchangeKind::kNcclSymmetric, ExchangeKind::kOneShot};

// The one-shot exchange alone in the DDP form: `n` ranks of this program's `exchange-rank`, each
// timing its own GPU (measure_one_shot_rank) into a JSON file of its own; the slowest rank's
// median is the row's.
struct RanksOutcome {
  std::optional<ExchangeRow> row;  // when every rank reported
  std::string failure;             // else why not, in one line
  int stop_signal = 0;
};

RanksOutcome one_shot_over_ranks(const Options& o, int n) {
  const LaunchTicket ticket = new_launch_ticket("exchange");
  const std::string& base = ticket.json_path;  // each rank writes base.<rank>
  const std::vector<std::string> args = {
      "exchange-rank", "--device", std::to_string(o.common.device), "--timeout-s", std::to_string(o.timeout_s),
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
    mine.kind = ExchangeKind::kOneShot;
    mine.form = ExchangeForm::kGraphed;
    mine.used = exchange_name(mine.kind);
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

// One rank of one_shot_over_ranks, started by its launcher.
int run_exchange_rank(const Options& o) {
  const auto me = worker_identity_from_environment(&process_environment);
  if (!me) throw UsageError("exchange-rank is one rank of `multi_gpu_bench exchange`, which starts it");
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  CUDA_CHECK(cudaSetDevice(device_for_local_rank(me->local_rank, o.common.device, gpus.device_count)));
  ControlChannel control(me->control_fd, me->heartbeat_fd);
  const Watch watch{o.timeout_s, &control, "rank " + std::to_string(me->rank)};
  Communicator comm = Communicator::init_rank(decode_unique_id(me->nccl_id_hex), me->world_size, me->rank, watch);
  const ExchangeRow row = measure_one_shot_rank(comm, watch, me->rank, me->world_size, o.allreduce);
  comm.finalize(watch);
  Report report("multi_gpu_bench", o.common.json ? std::optional<std::string>(*o.common.json + "." +
                                                                              std::to_string(me->rank))
                                                 : std::nullopt);
  report.json()["exchange_rank"] = {{"rank", me->rank}, {"time_us", timing(row.time_us)}, {"correct", row.correct}};
  report.check(row.correct, "exchange-rank: wrong sums");
  return report.finish();
}

// One printed row of the exchange alone, and its JSON.
void exchange_alone_row(const ExchangeRow& r, const char* form, Report& report, nlohmann::json& rows) {
  const std::string exchange = r.form == ExchangeForm::kEmptyKernel ? "none" : exchange_name(r.kind);
  report.out() << format("%6d%6s  %-16s%-14s%-12s%9.2f%9.2f%9.2f%6zu   %s\n", r.gpus, form, exchange.c_str(),
                         r.used.c_str(), form_name(r.form), r.time_us.median, r.time_us.min, r.time_us.max,
                         r.time_us.count, r.correct ? "exact" : "WRONG");
  if (!r.note.empty() && r.used != exchange_name(r.kind)) report.out() << "        " << r.note << "\n";
  report.check(r.correct, "exchange: " + exchange + " (" + form + ", " + form_name(r.form) + ") on " +
                              std::to_string(r.gpus) + " GPUs gave wrong sums");
  rows.push_back({{"gpus", r.gpus}, {"form", form}, {"launch", form_name(r.form)}, {"exchange", exchange},
                  {"used", r.used}, {"note", r.note}, {"time_us", timing(r.time_us)}, {"correct", r.correct}});
}

// Returns the signal that stopped one of its launches, 0 if none.
int run_exchange_alone(const Options& o, const std::vector<int>& devices, const std::vector<int>& counts,
                       Report& report) {
  std::ostream& out = report.out();
  out << "-- alone (GPU time per exchange: the slowest GPU's, median of " << o.allreduce.batches << " batches of "
      << o.allreduce.iterations << "). dp: one process, each GPU's batch queued behind a latch; launch: launched (one "
      << "call per exchange), graph (the batch replayed as a CUDA graph), one_kernel (the batch inside one kernel); "
      << "exchange none: an empty kernel, the launch alone. ddp: one process per GPU (mailboxes over CUDA IPC), each "
      << "rank replaying its graph behind an all-reduce that lines the ranks up:\n"
      << "  GPUs  form  exchange        ran           launch       time us   min us   max us  runs   sums\n";
  nlohmann::json rows = nlohmann::json::array();
  struct Way {
    ExchangeKind kind;
    ExchangeForm form;
  };
  constexpr Way kWays[] = {{ExchangeKind::kNccl, ExchangeForm::kLaunched},
                           {ExchangeKind::kNcclSymmetric, ExchangeForm::kLaunched},
                           {ExchangeKind::kOneShot, ExchangeForm::kLaunched},
                           {ExchangeKind::kOneShot, ExchangeForm::kGraphed},
                           {ExchangeKind::kOneShot, ExchangeForm::kInOneKernel},
                           {ExchangeKind::kOneShot, ExchangeForm::kEmptyKernel}};
  for (int n : counts) {
    const std::vector<int> sub(devices.begin(), devices.begin() + n);
    for (const Way& way : kWays) {
      exchange_alone_row(measure_exchange(sub, way.kind, o.allreduce, o.timeout_s, way.form), "dp", report, rows);
    }
  }
  for (int n : counts) {
    const RanksOutcome r = one_shot_over_ranks(o, n);
    if (r.stop_signal != 0) {
      report.json()["exchange"]["alone"] = rows;
      report.check(false, "exchange: stopped by signal " + std::to_string(r.stop_signal));
      return r.stop_signal;
    }
    if (!r.row) {
      out << format("%6d   ddp  one_shot        FAILED: %s\n", n, r.failure.c_str());
      report.check(false, "exchange: one_shot over " + std::to_string(n) + " ranks: " + r.failure);
      continue;
    }
    exchange_alone_row(*r.row, "ddp", report, rows);
  }
  report.json()["exchange"]["alone"] = rows;
  return 0;
}

// The epoch with each exchange: the DataParallel analog in this process (checked: ranks
// bit-identical, and against one GPU where it fits) and the DDP analog through the launcher
// (checked by rank 0, against one GPU). "exchange us" is the epoch less the sums and step alone
// (compute_alone_us): the exchange with its waiting, as the ddp part splits it.
int run_exchange_epochs(const Options& o, const std::vector<int>& devices, const std::vector<int>& counts,
                        Report& report) {
  std::ostream& out = report.out();
  out << "-- in the epoch (time per epoch of the slowest rank, median of " << o.repeats << " runs):\n"
      << "       points  GPUs  mode  exchange          ran              epoch us  compute us  exchange us  checked\n";
  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t points : parse_point_list(o.exchange_points, "--exchange-points")) {
    const regression::Config c = training_config(o, points);
    std::string why_not;
    CUDA_CHECK(cudaSetDevice(devices.front()));
    const std::optional<regression::TrainingResult> single = single_gpu(c, &why_not);
    for (int n : counts) {
      const std::vector<int> sub(devices.begin(), devices.begin() + n);
      const double compute_us = compute_alone_us(c, n, o.common.device, o.repeats);
      for (ExchangeKind kind : kExchanges) {
        for (const char* mode : {"dp", "ddp"}) {
          double epoch_us = 0.0;
          bool ok = false;
          std::string used = exchange_name(kind), why;
          if (std::string(mode) == "dp") {
            const ParallelRun run = train_data_parallel(make_problem(c), sub, o.repeats, {kind, o.timeout_s});
            epoch_us = run.slowest().epoch_us;
            used = run.exchange;
            ok = run.bit_identical() && (!single || check_against_single_gpu(run, *single).ok);
          } else {
            Options q = o;
            q.exchange = exchange_name(kind);
            q.fault_rank = -1;
            q.reference_max = 0;  // checked against one GPU, as the scaling runs
            std::ostringstream log;
            const LaunchOutcome r = launch_ddp(q, c, n, log, WorkerReports::discarded);
            if (r.launch.stop_signal != 0) {
              report.check(false, "exchange: stopped by signal " + std::to_string(r.launch.stop_signal));
              return r.launch.stop_signal;
            }
            ok = r.launch.ok() && r.rank0.is_object() && r.rank0.value("passed", false);
            why = launch_failure(r, log);
            epoch_us = slowest_epoch_us(r.rank0);
            if (r.rank0.is_object() && r.rank0.contains("exchange")) used = r.rank0["exchange"].value("used", used);
          }
          out << format("%13lld%6d%6s  %-18s%-14s%11.2f%12.2f%13.2f%9s\n", static_cast<long long>(points), n, mode,
                        exchange_name(kind), used.c_str(), epoch_us, compute_us, epoch_us - compute_us,
                        ok ? "ok" : "FAILED")
              << std::flush;
          report.check(ok, std::string("exchange: ") + mode + " --exchange " + exchange_name(kind) + " at " +
                               std::to_string(points) + " points on " + std::to_string(n) + " GPUs failed" + why);
          rows.push_back({{"points", points}, {"gpus", n}, {"mode", mode}, {"exchange", exchange_name(kind)},
                          {"used", used}, {"us_per_epoch", epoch_us}, {"compute_us", compute_us},
                          {"exchange_us", epoch_us - compute_us}, {"passed", ok}});
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
         "sums meeting by one_shot inside it; time per epoch of the slowest GPU, median of " << o.repeats << " runs); "
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
        run = train_data_parallel(problem, sub, o.repeats, {ExchangeKind::kOneShot, o.timeout_s, /*on_chip=*/true});
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

// Returns the signal that stopped one of its launches, 0 if none.
int run_exchange(const Options& o, const std::vector<int>& devices, Report& report) {
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

// ---------------------------------------------------------------------------------------------

// Every flag, checked before any CUDA call: nullopt to go on, else the exit code (--help: 0, bad usage: 2).
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 06's bench: topology, NCCL all-reduce, the DDP analog's launcher and faults, scaling"};
  const BenchParts parts = add_bench_options(app, o);
  app.require_subcommand(0, 1);
  if (auto code = parse_command_line(app, argc, argv)) return code;
  apply_quick(o, app);
  // 0 is the default's "every GPU" (one rank per GPU); given, a count must be a count.
  if (app.count("--gpus") > 0) require_at_least("--gpus", o.gpus, 1);
  if (app.count("--nproc") > 0) require_at_least("--nproc", o.nproc, 1);
  // 0 is the default's "10x --timeout-s"; given, a bound must be one.
  if (app.count("--launch-timeout-s") > 0) require_positive("--launch-timeout-s", o.launch_timeout_s);
  validate(o);
  o.parts.exchange_rank = parts.exchange_rank->parsed();
  if (o.parts.exchange_rank) return std::nullopt;
  require_flags_used(app);
  const bool all = app.get_subcommands().empty();
  o.parts.topology = all || parts.topology->parsed();
  o.parts.allreduce = all || parts.allreduce->parsed();
  o.parts.ddp = all || parts.ddp->parsed();
  o.parts.exchange = all || parts.exchange->parsed();
  o.parts.scaling = all || parts.scaling->parsed();
  if (o.fault_rank < 0 && (app.count("--fault-signal") > 0 || app.count("--fault-after-s") > 0)) {
    throw UsageError("--fault-signal and --fault-after-s go with --fault-rank");
  }
  check_ddp_flags(o.nproc, o.gpus, o.fault_rank, o.parts.ddp ? DdpRuns::kYes : DdpRuns::kNo);
  return std::nullopt;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  workbook::note_library("nccl", workbook::nccl_version());  // named in every result's provenance
  if (o.parts.exchange_rank) return run_exchange_rank(o);

  const std::vector<int> devices = pick_devices(o.common.device, o.gpus);
  // Without --nproc or --gpus, the ranks are the GPUs found: only now can --fault-rank be checked.
  if (o.parts.ddp) require_rank_exists(o.fault_rank, o.nproc > 0 ? o.nproc : static_cast<int>(devices.size()));
  Report report("multi_gpu_bench", o.common.json);
  report.out() << "multi_gpu_bench: " << devices.size() << " GPU" << (devices.size() == 1 ? "" : "s")
               << " from device " << o.common.device << "\n";
  report.json()["gpus"] = devices.size();
  report.json()["quick"] = o.common.quick;
  report.json()["environment"] = forced_environment_json();
  if (o.parts.topology) run_topology(o, devices, report);
  if (o.parts.allreduce) run_allreduce(o, devices, report);
  int stop_signal = 0;  // SIGTERM, SIGINT or SIGHUP stopped a launch: report, then end as that signal
  if (o.parts.ddp) stop_signal = run_ddp_launcher(o, devices, report);
  if (stop_signal == 0 && o.parts.exchange) stop_signal = run_exchange(o, devices, report);
  if (stop_signal == 0 && o.parts.scaling) stop_signal = run_scaling(o, devices, report);
  const int code = report.finish();
  if (stop_signal != 0) end_by_signal(stop_signal);
  return code;
}

}  // namespace
}  // namespace workbook::multi_gpu

int main(int argc, char** argv) {
  return workbook::guarded_main("multi_gpu_bench", [&] {
    // First, while this process has one thread and before any NCCL call: NVLink multicast off,
    // whatever the environment said (this process, each launcher worker, each mpirun rank).
    workbook::multi_gpu::apply_forced_environment();
    return workbook::multi_gpu::run(argc, argv);
  });
}

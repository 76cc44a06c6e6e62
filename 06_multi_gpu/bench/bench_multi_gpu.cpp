// bench_multi_gpu.cpp: chapter 06's measuring harness, beside the lesson (replica.cu,
// multi_gpu.cu, ddp.cu, one_shot_exchange.cu), whose replica and training loops it links: what
// the GPUs can move between them, what an all-reduce costs, the DDP analog started by a launcher
// of its own (what torchrun does for one node) with a fault injected on demand, strong and weak
// scaling, and the epoch's exchange done several ways. The parts are in bench_parts.h.
//
//   multi_gpu_bench                              # everything: topology, allreduce, ddp, exchange, scaling
//   multi_gpu_bench topology | allreduce | ddp | exchange | scaling   # one part
//   multi_gpu_bench ddp --nproc 2 --fault-rank 1   # the launcher kills rank 1 as it trains; the others stop
//   multi_gpu_bench ddp --nproc 2 --exchange one_shot            # the ranks exchange by hand
//   multi_gpu_bench --quick --gpus 1             # what the tests and compute-sanitizer run
//
// The DDP ranks are the lesson's own program, `multi_gpu ddp`, one per GPU (the launcher finds it
// beside this program); each learns its rank from the environment the launcher gives it.
#include "bench_parts.h"

#include "bench_plan.h"
#include "bench/training_ways.h"
#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "gpu_probe.h"
#include "measure.h"
#include "nccl_check.h"
#include "program.h"
#include "provenance.h"
#include "regression_cli.h"
#include "support/rank_environment.h"
#include "stop_signals.h"
#include "table.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <optional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// ---------------------------------------------------------------------------------------------
// topology

void run_topology(const BenchOptions& o, const std::vector<int>& devices, Report& report) {
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

void run_allreduce(const BenchOptions& o, const std::vector<int>& devices, Report& report) {
  std::ostream& out = report.out();
  const std::vector<std::size_t> sizes = allreduce_sizes(static_cast<std::size_t>(o.min_bytes),
                                                         static_cast<std::size_t>(o.max_bytes), o.factor);
  const int n = static_cast<int>(devices.size());
  require_memory_on_each(devices, "--max-bytes " + std::to_string(o.max_bytes), ByteCount().add(o.max_bytes, 1, 2));
  out << "== allreduce: NCCL " << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH << " (headers), " << n
      << " GPU" << (n == 1 ? "" : "s") << " in one process, float sum, out of place; "
      << o.allreduce.iterations << " back-to-back per batch after " << o.allreduce.warmup << " warm-up, "
      << median_of(o.allreduce.batches, "batch", "batches") << "; busbw = algbw * 2(n-1)/n = algbw * " << fixed(bus_factor(n), 2) << "\n";
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

namespace {

// Every flag, checked before any CUDA call: nullopt to go on, else the exit code (--help: 0, bad usage: 2).
std::optional<int> parse_options(int argc, char** argv, BenchOptions& o) {
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
  resolve_exchanges(o, app, parts.scaling->parsed());
  validate(o);
  regression::refuse_idle_seed(app, o.config);
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
  BenchOptions o;
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
  // Not for a reader: the ranks of --exchange nccl_symmetric are this program's (training_ways.h).
  if (argc > 1 && std::string(argv[1]) == "train-rank") return workbook::multi_gpu::symmetric_lesson_main(argc - 1, argv + 1);
  return workbook::guarded_main("multi_gpu_bench", [&] {
    // First, while this process has one thread and before any NCCL call: NVLink multicast off,
    // whatever the environment said (this process, each launcher worker, each mpirun rank).
    workbook::multi_gpu::apply_forced_environment();
    return workbook::multi_gpu::run(argc, argv);
  });
}

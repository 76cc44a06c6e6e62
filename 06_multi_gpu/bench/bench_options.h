// bench_options.h: multi_gpu_bench's flags, kept out of the harness's way: what each part takes,
// what --quick makes smaller, and the checks that turn a bad value into one line and exit 2.
//
//   BenchOptions o;
//   const BenchParts parts = add_bench_options(app, o);   // the flags and the five subcommands
//   ... parse ...
//   apply_quick(o, app);
//   resolve_exchanges(o, app, scaling_alone);
//   validate(o);
#pragma once

#include "cli.h"
#include "measure.h"
#include "regression_problem.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace workbook::multi_gpu {

struct BenchOptions {
  CommonOptions common;
  int gpus = 0;  // 0: every GPU from --device on
  // training (dp, ddp, scaling)
  regression::Config config;
  std::optional<double> lr;
  int repeats = 5;
  std::int64_t reference_max = 20'000'000;
  // ddp
  int nproc = 0;  // 0: one per GPU used
  int fault_rank = -1;             // this rank gets fault_signal from the launcher (-1: none)
  std::string fault_signal = "kill";  // kill (a crash) or stop (a hang)
  double fault_after_s = 1.0;        // after the rank's first heartbeat (its communicator is up)
  double timeout_s = 30.0;
  double launch_timeout_s = 0.0;  // 0: 10x --timeout-s
  bool nccl_nonblocking = false;  // ncclConfig_t::blocking = 0 for the DDP communicators
  std::string exchange = "nccl";  // ddp and scaling: passed to the ranks (exchange.h)
  bool on_chip = false;           // ddp: passed to the ranks (--on-chip, the exchange one_shot)
  // exchange: the three ways alone, then in the epoch at these sizes, then on chip at these
  std::string exchange_points = "5M,200M";
  std::string on_chip_points = "1M,2M,4M,5M,6M,8M,10M,12M";
  std::string one_gpu_sweep;  // chapter 05's fused_kernels_bench --sweep JSON: its best DRAM-bound variant per size
  // allreduce
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = std::int64_t{1} << 30;
  int factor = 2;
  AllreduceTiming allreduce;
  // topology
  int copy_mib = 256;
  // scaling
  std::string strong = "5M,100M";
  std::string weak = "100M";
  std::string gpu_counts = "1,2,4";
  // Each run in turn (--exchange as a list; default all three): weak scaling at each one's cost.
  std::vector<std::string> scaling_exchanges;
  // The parts to run, from the subcommand named (none named: all five; exchange_rank: that alone).
  struct Parts {
    bool topology = false, allreduce = false, ddp = false, exchange = false, scaling = false;
    bool exchange_rank = false;  // hidden: one rank of exchange's DDP form (--exchange)
  } parts;
};

// The parts, one subcommand each; none given runs them all.
struct BenchParts {
  CLI::App* topology = nullptr;
  CLI::App* allreduce = nullptr;
  CLI::App* ddp = nullptr;
  CLI::App* exchange = nullptr;
  CLI::App* scaling = nullptr;
  CLI::App* exchange_rank = nullptr;  // hidden: one rank of exchange's DDP form (--exchange)
};

BenchParts add_bench_options(CLI::App& app, BenchOptions& o);
// --quick: small everything, unless the flag was given explicitly.
void apply_quick(BenchOptions& o, const CLI::App& app);
// --exchange: one way for ddp (and the hidden exchange-rank); with the scaling part alone, a list
// run in turn. Fills o.scaling_exchanges (all three when not given). UsageError otherwise.
void resolve_exchanges(BenchOptions& o, const CLI::App& app, bool scaling_alone);
void validate(const BenchOptions& o);
// --one-gpu-sweep's file: there, JSON, and chapter 05's sweep (its program and its `sweep` rows); UsageError otherwise.
void require_fused_sweep(const std::string& path);
// With one part named, every flag given must be one that part reads: `topology --points 5M`,
// `allreduce --exchange one_shot` or `exchange --max-bytes 1K` would do nothing, so each is a
// UsageError naming the parts that read it ("--points is for ddp, not topology").
void require_flags_used(const CLI::App& app);
// --fault-signal's name as a signal number: kill -> SIGKILL, stop -> SIGSTOP; UsageError otherwise.
int fault_signal_number(const std::string& name);

}  // namespace workbook::multi_gpu

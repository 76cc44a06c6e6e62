// bench_parts.h: the parts of multi_gpu_bench (each a subcommand, each reporting into one Report),
// and what they share: launching the lesson's ranks and reading back rank 0's report.
//
//   bench_multi_gpu.cpp  main, the options, topology, allreduce
//   bench_launch.cpp     ddp (the launcher and its faults), scaling, and the launches they share
//   bench_exchange.cpp   exchange: the 12 bytes alone (exchange_alone.h), in the epoch, on chip
#pragma once

#include "bench_options.h"
#include "gpu_memory.h"
#include "launcher.h"
#include "regression_problem.h"
#include "report.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// The parts. Those that launch ranks return the signal that stopped a launch (SIGTERM, SIGINT,
// SIGHUP: the program then reports and ends as that signal), 0 if none.
void run_topology(const BenchOptions& o, const std::vector<int>& devices, Report& report);
void run_allreduce(const BenchOptions& o, const std::vector<int>& devices, Report& report);
int run_ddp_launcher(const BenchOptions& o, const std::vector<int>& devices, Report& report);
int run_scaling(const BenchOptions& o, const std::vector<int>& devices, Report& report);
int run_exchange(const BenchOptions& o, const std::vector<int>& devices, Report& report);
int run_exchange_rank(const BenchOptions& o);  // one rank of exchange's DDP form (--exchange)

// Asks every device of the run for `need` before anything is allocated on any of them.
void require_memory_on_each(const std::vector<int>& devices, const std::string& what, const ByteCount& need);
std::string fixed(double v, int digits);
// The multicast-off variables as this process has them (main set them; see launcher.h).
nlohmann::json forced_environment_json();
// The whole-run bound of a launch: --launch-timeout-s, or 10x --timeout-s.
double launch_bound_s(const BenchOptions& o);
// The run's training settings at `points`, with the learning rate for that size.
regression::Config training_config(const BenchOptions& o, std::int64_t points);

// The epoch without its all-reduce: rank 0's shard (the largest) alone on `device`, sums and
// step only, timed as the training loop is (CUDA events around every epoch of a run, median of
// `repeats` runs after one). What a DDP epoch takes beyond this is the all-reduce and the waiting
// around it.
double compute_alone_us(const regression::Config& c, int ranks, int device, int repeats);
// The slowest rank's time per epoch in rank 0's report (0 when there is none).
double slowest_epoch_us(const nlohmann::json& rank0);

// What every launch of ranks needs first: a file name for the ranks' JSON (a new empty file in
// /tmp, named after `what`) and NCCL's unique id, as hex. This process hosts the id's bootstrap
// root until the ranks are done.
struct LaunchTicket {
  std::string json_path;
  std::string nccl_id_hex;
};
LaunchTicket new_launch_ticket(const std::string& what);

struct LaunchOutcome {
  LaunchResult launch;
  nlohmann::json rank0;  // rank 0's JSON, or null
};
// `nproc` ranks of the lesson's `multi_gpu ddp` with this run's flags. `reports`: the sweeps
// (scaling, exchange) read rank 0's JSON and print a row, so they discard the ranks' reports; a
// single `ddp --nproc N` shows them.
LaunchOutcome launch_ddp(const BenchOptions& o, const regression::Config& c, int nproc, std::ostream& log,
                         WorkerReports reports = WorkerReports::to_stderr);
// Why a sweep's launch did not pass, after ": " (empty when it passed).
std::string launch_failure(const LaunchOutcome& r, const std::ostringstream& log);

}  // namespace workbook::multi_gpu

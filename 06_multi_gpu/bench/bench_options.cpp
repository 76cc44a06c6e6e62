// bench_options.cpp: multi_gpu_bench's flags (bench_options.h).
#include "bench_options.h"

#include "bench_plan.h"
#include "support/exchange.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <csignal>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

BenchParts add_bench_options(CLI::App& app, BenchOptions& o) {
  add_common_options(app, o.common);
  app.fallthrough();  // the flags may come before or after the subcommand
  app.add_option("--gpus", o.gpus, "GPUs to use from --device on (default: all)")->type_name("G");
  auto* training = app.add_option_group("training", "ddp and scaling");
  add_size_option(*training, "--points", o.config.points,
                  "points of the whole dataset, e.g. 5M (X = i * 2e-6, first 80% train)");
  training->add_option("--epochs", o.config.epochs, "full-batch epochs")->type_name("E");
  training->add_option("--lr", o.lr, "learning rate (default 0.01, scaled by (5M/N)^2 above 5M points, as chapter 05's sweep)");
  training->add_option("--noise", o.config.noise, "standard deviation of the noise on y");
  add_seed_option(*training, o.config.seed, "cuRAND seed of the noise");
  training->add_option("--repeats", o.repeats, "timed runs after the checked run");
  add_size_option(*training, "--reference-max", o.reference_max,
                  "largest point count checked against the float64 CPU reference");
  auto* ddp_group = app.add_option_group("ddp", "ddp ranks and faults");
  ddp_group->add_option("--nproc", o.nproc, "ranks the built-in launcher starts (default: one per GPU)")->type_name("N");
  ddp_group->add_option("--fault-rank", o.fault_rank,
                        "a fault from outside: the launcher signals this rank once it trains (see --fault-signal)")
      ->type_name("R");
  ddp_group->add_option("--fault-signal", o.fault_signal, "kill (SIGKILL: a crash, the default) or stop (SIGSTOP: a hang)")
      ->type_name("SIG");
  ddp_group->add_option("--fault-after-s", o.fault_after_s,
                        "seconds after the rank's first heartbeat, sent once its communicator is up (default 1; at most 86400)")
      ->type_name("S");
  ddp_group->add_option("--timeout-s", o.timeout_s, "longest wait without progress; after a failure, the bound for every rank to stop (at most 86400)");
  ddp_group->add_option("--launch-timeout-s", o.launch_timeout_s,
                        "bound of a whole launch (ddp, each scaling run), failure or not (default 10x --timeout-s; at most 86400)");
  ddp_group->add_flag("--nccl-nonblocking", o.nccl_nonblocking,
                      "DDP communicators with ncclConfig_t::blocking = 0 (each collective then starts from a helper "
                      "thread: slower, see README)");
  ddp_group->add_option("--exchange", o.exchange,
                        "how the ranks' sums meet: nccl (ddp's default), nccl_symmetric or one_shot; scaling takes a "
                        "list, e.g. nccl,one_shot (default: all three)")
      ->type_name("X");
  ddp_group->add_flag("--on-chip", o.on_chip,
                      "ddp: every epoch in one launch per rank, its shard on its GPU's chip (exchange one_shot)");
  auto* ar = app.add_option_group("allreduce", "all-reduce sweep");
  add_size_option(*ar, "--min-bytes", o.min_bytes, "smallest all-reduce (bytes)");
  add_size_option(*ar, "--max-bytes", o.max_bytes,
                  "largest all-reduce (bytes, e.g. 256M; default 1 GiB, --quick 64 MiB)");
  ar->add_option("--factor", o.factor, "size step (default 2, --quick 8)");
  ar->add_option("--iterations", o.allreduce.iterations, "all-reduces (and exchanges) per timed batch");
  ar->add_option("--batches", o.allreduce.batches, "timed batches (median reported), allreduce and exchange");
  ar->add_option("--warmup", o.allreduce.warmup, "all-reduces (and exchange batches) before timing");
  add_size_option(app, "--copy-mib", o.copy_mib, "topology: MiB per peer copy");
  auto* sc = app.add_option_group("scaling", "scaling runs");
  sc->add_option("--strong", o.strong, "strong scaling: total points, e.g. 5M,100M");
  sc->add_option("--weak", o.weak, "weak scaling: points per GPU, e.g. 100M");
  sc->add_option("--gpu-counts", o.gpu_counts, "GPU counts to visit, scaling and exchange (those this machine has)");
  app.add_option("--exchange-points", o.exchange_points, "exchange: the epoch's sizes, e.g. 5M,200M (default; --quick 200K)")
      ->type_name("LIST");
  app.add_option("--on-chip-points", o.on_chip_points,
                 "exchange: the on-chip training's sizes (default 1M,2M,4M,5M,6M,8M,10M,12M; --quick 200K)")
      ->type_name("LIST");
  app.add_option("--one-gpu-sweep", o.one_gpu_sweep,
                 "exchange: chapter 05's `fused_kernels_bench --sweep --json` file of this run; its fastest "
                 "DRAM-bound variant at each on-chip size becomes a one_gpu_best row")
      ->type_name("FILE");
  BenchParts parts;
  parts.topology = app.add_subcommand("topology", "peer-access matrix, peer copy bandwidth and latency");
  parts.allreduce = app.add_subcommand("allreduce", "NCCL all-reduce, 8 B to 1 GiB: time, algbw, busbw, check");
  parts.ddp = app.add_subcommand("ddp", "DistributedDataParallel analog: one `multi_gpu ddp` process per GPU");
  parts.exchange = app.add_subcommand("exchange", "the epoch's 12-byte exchange three ways: alone, and in the epoch");
  parts.scaling = app.add_subcommand("scaling", "strong and weak scaling over 1, 2, 4 GPUs");
  // Not for a reader: exchange's launcher starts one per GPU, as ddp's starts `multi_gpu ddp`.
  parts.exchange_rank = app.add_subcommand("exchange-rank", "one rank of exchange's DDP form, one process per GPU")
                            ->group("");
  return parts;
}

void require_flags_used(const CLI::App& app) {
  const std::vector<CLI::App*> named = app.get_subcommands();
  if (named.empty()) return;  // every part runs, and every flag is read by one of them
  const std::string part = named.front()->get_name();
  struct Use {
    const char* flag;
    std::vector<const char*> parts;
  };
  static const Use kUses[] = {
      {"--points", {"ddp"}},
      {"--reference-max", {"ddp"}},
      {"--epochs", {"ddp", "exchange", "scaling"}},
      {"--lr", {"ddp", "exchange", "scaling"}},
      {"--noise", {"ddp", "exchange", "scaling"}},
      {"--seed", {"ddp", "exchange", "scaling"}},
      {"--repeats", {"ddp", "exchange", "scaling"}},
      {"--timeout-s", {"ddp", "exchange", "scaling"}},
      {"--launch-timeout-s", {"ddp", "exchange", "scaling"}},
      {"--nccl-nonblocking", {"ddp", "exchange", "scaling"}},
      {"--exchange", {"ddp", "scaling"}},
      {"--on-chip", {"ddp"}},
      {"--on-chip-points", {"exchange"}},
      {"--one-gpu-sweep", {"exchange"}},
      {"--min-bytes", {"allreduce"}},
      {"--max-bytes", {"allreduce"}},
      {"--factor", {"allreduce"}},
      {"--iterations", {"allreduce", "exchange"}},
      {"--batches", {"allreduce", "exchange"}},
      {"--warmup", {"allreduce", "exchange"}},
      {"--copy-mib", {"topology"}},
      {"--strong", {"scaling"}},
      {"--weak", {"scaling"}},
      {"--gpu-counts", {"scaling", "exchange"}},
      {"--exchange-points", {"exchange"}},
  };
  for (const Use& use : kUses) {
    if (app.count(use.flag) == 0) continue;
    std::string readers;
    bool read = false;
    for (const char* p : use.parts) {
      read = read || part == p;
      readers += (readers.empty() ? "" : p == use.parts.back() ? " and " : ", ") + std::string(p);
    }
    if (!read) throw UsageError(std::string(use.flag) + " is for " + readers + ", not " + part);
  }
}

int fault_signal_number(const std::string& name) {
  if (name == "kill") return SIGKILL;
  if (name == "stop") return SIGSTOP;
  throw UsageError("--fault-signal must be kill or stop, got '" + name + "'");
}

void apply_quick(BenchOptions& o, const CLI::App& app) {
  if (!o.common.quick) return;
  auto unset = [&](const char* flag) { return app.count(flag) == 0; };
  if (unset("--points")) o.config.points = 200'003;  // odd: the test shards of 2 GPUs differ in size, the training shards of 3
  if (unset("--epochs")) o.config.epochs = 20;
  if (unset("--repeats")) o.repeats = 1;
  if (unset("--max-bytes")) o.max_bytes = 64 << 20;
  if (unset("--factor")) o.factor = 8;
  if (unset("--iterations")) o.allreduce.iterations = 5;
  if (unset("--batches")) o.allreduce.batches = 2;
  if (unset("--warmup")) o.allreduce.warmup = 1;
  if (unset("--copy-mib")) o.copy_mib = 8;
  if (unset("--strong")) o.strong = "200K";
  if (unset("--weak")) o.weak = "100K";
  if (unset("--exchange-points")) o.exchange_points = "200K";
  if (unset("--on-chip-points")) o.on_chip_points = "200K";
  if (unset("--timeout-s")) o.timeout_s = 60.0;  // sanitizers slow everything down
}

void require_fused_sweep(const std::string& path) {
  require_input_file("--one-gpu-sweep", path);
  std::ifstream file(path);
  nlohmann::json j;
  try {
    file >> j;
  } catch (const nlohmann::json::exception&) {
    throw UsageError("--one-gpu-sweep " + path + ": not JSON");
  }
  if (!j.is_object() || j.value("program", "") != "fused_kernels_bench" || !j.contains("sweep") || !j["sweep"].is_array()) {
    throw UsageError("--one-gpu-sweep " + path + ": not the JSON of `fused_kernels_bench --sweep` (chapter 05)");
  }
}

void resolve_exchanges(BenchOptions& o, const CLI::App& app, bool scaling_alone) {
  std::vector<std::string> names{"nccl", "nccl_symmetric", "one_shot"};
  if (app.count("--exchange") > 0) names = list_items("--exchange", o.exchange);
  for (const std::string& name : names) {
    parse_exchange(name);
    if (std::count(names.begin(), names.end(), name) > 1) throw UsageError("--exchange: '" + o.exchange + "' lists " + name + " twice");
  }
  if (app.count("--exchange") > 0 && names.size() > 1 && !scaling_alone) {
    throw UsageError("--exchange " + o.exchange + ": a list is for scaling; ddp runs one way at a time");
  }
  o.scaling_exchanges = names;
  if (app.count("--exchange") > 0) o.exchange = names.front();
}

void validate(const BenchOptions& o) {
  regression::validate(o.config);
  if (o.lr) require_positive("--lr", *o.lr);
  require_at_least("--gpus", o.gpus, 0);
  require_at_least("--repeats", o.repeats, 1);
  require_at_least("--nproc", o.nproc, 0);
  require_at_least("--fault-rank", o.fault_rank, -1);
  (void)fault_signal_number(o.fault_signal);
  require_at_least("--fault-after-s", o.fault_after_s, 0.0);
  require_positive("--timeout-s", o.timeout_s);
  require_at_least("--launch-timeout-s", o.launch_timeout_s, 0.0);
  for (const auto& [flag, seconds] : {std::pair{"--fault-after-s", o.fault_after_s}, {"--launch-timeout-s", o.launch_timeout_s},
                                       {"--timeout-s", o.timeout_s}}) {
    if (!std::isfinite(seconds)) throw UsageError(std::string(flag) + " must be a finite number of seconds");
    require_at_most(flag, seconds, kMaxWaitSeconds);
  }
  require_at_least("--min-bytes", o.min_bytes, 4);
  require_at_least("--max-bytes", o.max_bytes, o.min_bytes);
  require_at_most("--max-bytes", o.max_bytes, std::int64_t{8} << 30);
  if (o.min_bytes % 4 != 0 || o.max_bytes % 4 != 0) throw UsageError("--min-bytes and --max-bytes must be multiples of 4 (floats)");
  require_at_least("--factor", o.factor, 2);
  require_at_least("--iterations", o.allreduce.iterations, 1);
  require_at_least("--batches", o.allreduce.batches, 1);
  require_at_least("--warmup", o.allreduce.warmup, 0);
  require_at_least("--copy-mib", o.copy_mib, 1);
  parse_point_list(o.strong, "--strong");
  parse_point_list(o.weak, "--weak");
  parse_int_list(o.gpu_counts, "--gpu-counts");
  parse_point_list(o.exchange_points, "--exchange-points");
  parse_point_list(o.on_chip_points, "--on-chip-points");
  if (o.on_chip && o.exchange != "nccl" && o.exchange != "one_shot") {
    throw UsageError("--on-chip exchanges the sums by one_shot inside its kernel, not --exchange " + o.exchange);
  }
  if (!o.one_gpu_sweep.empty()) require_fused_sweep(o.one_gpu_sweep);
}

}  // namespace workbook::multi_gpu

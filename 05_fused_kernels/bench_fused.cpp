// bench_fused.cpp: chapter 05's measuring harness, beside the lesson (fused_kernels.cu), whose
// kernels it links. Three measurements the lesson leaves out:
//
//   fused_kernels_bench --sweep --csv sweep.csv    # every size x every variant, checked, then timed
//   fused_kernels_bench --breakdown                 # per-kernel time of variants 1 and 3 at --points
//   fused_kernels_bench --trace trace.json          # a Chrome trace of 3 epochs of variants 1, 3, 4, 6
//   fused_kernels_bench --barrier                   # five ways variant 8's blocks can meet, and its epoch
//
// Without a mode flag it runs --sweep, --breakdown and --barrier. Every timed or traced run is checked
// against the float64 reference first, as in the lesson.
#include "barrier.h"
#include "cli.h"
#include "compute_capability.h"
#include "copy_ceiling.h"
#include "epoch_trace.h"
#include "format.h"
#include "fused_kernels.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "provenance.h"
#include "report.h"
#include "stats.h"
#include "sweep.h"
#include "table.h"

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace workbook::fused {
namespace {

constexpr Tolerance kAtomicLossTolerance{0.0, 1e-3};  // variant 2: see fused_kernels.cu

regression::Check check_variant(Variant v, const TrainingResult& got, const TrainingResult& want) {
  return regression::check_against(got, want, regression::kParameterTolerance,
                                   v == Variant::kAtomic ? kAtomicLossTolerance : regression::kLossTolerance);
}

// One epoch of variant v with a pair of events around each GPU operation (the same launches as
// FusedTraining::epoch), on tracks first_track... (variant 6: its stream, then one per side stream).
void traced_epoch(FusedTraining& gpu, Variant v, int epoch, TraceRecorder& trace, int first_track,
                  std::vector<Event>& joins) {
  const std::string e = "e" + std::to_string(epoch) + " ";
  cudaStream_t main = gpu.stream();
  auto op = [&](cudaStream_t s, int track, const std::string& name, const char* category, auto&& enqueue) {
    trace.op(s, first_track + track, e + name, category, enqueue);
  };
  const int blocks = gpu.shape(v).blocks;
  switch (v) {
    case Variant::kUnfused:
      op(main, 0, "forward", "compute", [&] { gpu.unfused_forward(); });
      op(main, 0, "loss", "compute", [&] { gpu.unfused_loss(epoch); });
      op(main, 0, "backward", "compute", [&] { gpu.unfused_backward(); });
      op(main, 0, "step", "step", [&] { gpu.unfused_step(); });
      return;
    case Variant::kBlockReduce:
      op(main, 0, "fused kernel", "compute", [&] { gpu.block_partials({0, gpu.train_points()}, blocks, 0, blocks, main); });
      op(main, 0, "update", "step", [&] { gpu.update(epoch, blocks, blocks); });
      return;
    case Variant::kLastBlock:
      op(main, 0, "fused kernel + last block's step", "compute", [&] { gpu.last_block_epoch(epoch); });
      return;
    case Variant::kStreams: {  // FusedTraining::streams_epoch, with its fork and join events here
      const int stride = blocks * kStreamCount;
      Event& ready = joins.emplace_back();
      ready.record(main);
      for (int k = 0; k < kStreamCount; ++k) {
        cudaStream_t side = gpu.side_stream(k);
        CUDA_CHECK(cudaStreamWaitEvent(side, ready.get(), 0));
        op(side, 1 + k, "segment " + std::to_string(k + 1), "compute",
           [&] { gpu.block_partials(gpu.segment(k), blocks, k * blocks, stride, side); });
        Event& done = joins.emplace_back();
        done.record(side);
        CUDA_CHECK(cudaStreamWaitEvent(main, done.get(), 0));
      }
      op(main, 0, "update", "step", [&] { gpu.update(epoch, stride, stride); });
      return;
    }
    default: throw std::logic_error("traced_epoch: variants 1, 3, 4 and 6 only");
  }
}

// `warmup` plain epochs, then `epochs` traced ones of each variant of the layout (an untimed pass).
std::vector<TraceOp> record(FusedTraining& gpu, const TraceLayout& layout, int warmup, int epochs) {
  NvtxRange range("trace");
  TraceRecorder trace(layout.tracks);
  std::vector<Event> joins;
  joins.reserve(static_cast<std::size_t>(layout.variants.size() * epochs * (kStreamCount + 1)));
  for (std::size_t i = 0; i < layout.variants.size(); ++i) {
    const Variant v = layout.variants[i];
    gpu.reset_params();
    for (int e = 0; e < warmup; ++e) gpu.epoch(v, e);
    trace.mark_origin(gpu.stream());  // time zero: the first traced variant's; later ones follow it
    for (int e = warmup; e < warmup + epochs; ++e) traced_epoch(gpu, v, e, trace, layout.first_track[i], joins);
  }
  return trace.ops();
}

// --breakdown: the per-epoch time of each operation of variants 1 and 3 (median, min, max over the
// epochs of a traced pass), its share of the epoch (of the means: they add up to the epoch's, as
// medians need not), then each epoch's operations together.
void breakdown(FusedTraining& gpu, Report& report) {
  const std::vector<Variant> both{Variant::kUnfused, Variant::kBlockReduce};
  const TraceLayout layout = trace_layout(both);
  const int epochs = gpu.epochs() - std::min(kTraceWarmupEpochs, gpu.epochs() - 1);
  const std::vector<TraceOp> ops = record(gpu, layout, gpu.epochs() - epochs, epochs);
  Table table({{"variant", "variant"}, {"operation", "operation"}, {"time_us", "us/epoch", 2, Column::Style::kTiming},
               {"share", "share %", 1}});
  for (std::size_t i = 0; i < both.size(); ++i) {
    std::map<std::string, std::vector<double>> samples;  // operation -> its duration in every epoch
    std::vector<std::string> order;
    for (const TraceOp& op : ops) {
      if (op.track != layout.first_track[i]) continue;
      const std::string name = op.name.substr(op.name.find(' ') + 1);  // drop "e<epoch> "
      if (samples[name].empty()) order.push_back(name);
      samples[name].push_back(op.duration_us);
    }
    std::vector<double> per_epoch(static_cast<std::size_t>(epochs), 0.0);  // each epoch's operations together
    for (const std::string& name : order) {
      for (std::size_t e = 0; e < per_epoch.size() && e < samples[name].size(); ++e) per_epoch[e] += samples[name][e];
    }
    const Stats total = summarize(per_epoch);
    for (const std::string& name : order) {
      const Stats t = summarize(samples[name]);
      table.add_row().set("variant", label(both[i])).set("operation", name).set("time_us", timing(t))
          .set("share", 100.0 * t.mean / total.mean);
    }
    table.add_row().set("variant", label(both[i])).set("operation", "total").set("time_us", timing(total));
  }
  report.out() << format("per-epoch time of each operation at %lld training points (over %d epochs, a pair of CUDA "
                         "events around each):\n", static_cast<long long>(gpu.train_points()), epochs);
  table.print(report.out());
  report.json()["breakdown"] = table.json();
}

// --trace FILE: the Chrome trace, and what each variant's epochs add up to.
void trace_to_file(FusedTraining& gpu, const std::vector<Variant>& variants, const std::string& path, Report& report) {
  const TraceLayout layout = trace_layout(variants);
  const int epochs = std::min(kTracedEpochs, gpu.epochs());
  const int warmup = std::min(kTraceWarmupEpochs, gpu.epochs() - epochs);
  const std::vector<TraceOp> ops = record(gpu, layout, warmup, epochs);
  write_chrome_trace(path, ops, layout.tracks);
  Table table({{"variant", "variant"}, {"ops", "ops/epoch"}, {"epoch_us", "epoch us", 2},
               {"busy_us", "some op running us", 2}, {"busy_percent", "%", 0}});
  for (const TracedVariant& t : summarize_trace(ops, layout, epochs)) {
    table.add_row().set("variant", label(t.variant)).set("ops", t.ops / epochs).set("epoch_us", t.epoch_us)
        .set("busy_us", t.busy_us).set("busy_percent", t.epoch_us > 0 ? 100.0 * t.busy_us / t.epoch_us : 0.0);
  }
  report.out() << format("trace: %d epochs per variant after %d warm-up, a pair of CUDA events around each GPU "
                         "operation (untimed pass):\n", epochs, warmup);
  table.print(report.out());
  report.out() << format("trace: %zu operations on %zu tracks written to %s\n", ops.size(), layout.tracks.size(),
                         path.c_str());
  report.json()["trace"] = {{"path", path}, {"epochs", epochs}, {"warmup_epochs", warmup}, {"operations", ops.size()},
                            {"tracks", layout.tracks}, {"variants", table.json()}};
}

// The sweep's rows as CSV, after the provenance line: where the rows came from.
void write_sweep_csv(const std::string& path, const std::vector<SweepRow>& rows, const Report& report) {
  std::ostringstream text;
  text << provenance_line(report.provenance());
  write_csv(text, rows);
  write_output_file("--csv", path, text.str());
  report.out() << "wrote " + path + "\n";
}

// --sweep: per size, the data, the float64 reference on a host thread (the large sizes take
// seconds each, so they run side by side), and the first run of every variant; then each first
// run checked, and those that passed timed.
void sweep(const Config& base, const std::vector<std::int64_t>& sizes, const std::vector<Variant>& variants,
           Repeats repeats, double copy_gbps, const std::string& csv, Report& report) {
  std::ostream& out = report.out();
  out << format("sweep: %zu sizes x %zu variants, %d epochs, %s after %d warm-up; lr %g up to %lld points, "
                "scaled by (5M/N)^2 above\n", sizes.size(), variants.size(), base.epochs,
                median_of(repeats.timed, "run", "runs").c_str(), repeats.warmup, base.lr,
                static_cast<long long>(regression::kArticlePoints)) << table_header() << "\n";
  struct SizeRun {
    Config config;
    std::unique_ptr<FusedTraining> gpu;
    std::future<TrainingResult> reference;
    std::vector<std::pair<Variant, TrainingResult>> first;
  };
  std::vector<SizeRun> runs;
  nlohmann::json skipped = nlohmann::json::array();  // variants this GPU cannot run, once each, with why
  Stream stream;
  for (const std::int64_t points : sizes) {
    SizeRun run;
    run.config = base;
    run.config.points = points;
    run.config.lr = regression::scaled_lr(base.lr, points);
    regression::validate(run.config);
    run.gpu = std::make_unique<FusedTraining>(run.config, stream.get());  // the sizes before it are still held
    run.reference = std::async(std::launch::async, [data = run.gpu->copy_dataset(), config = run.config] {
      return regression::train_reference(data, config);
    });
    for (const Variant v : variants) {
      // Each reason once: the GPU's (variant 7 without clusters) holds at every size; variant 8's
      // "does not fit on chip" names the size's megabytes, so each size too large says it.
      const std::string why = run.gpu->skip_reason(v);
      const bool said = std::any_of(skipped.begin(), skipped.end(), [&](const nlohmann::json& k) {
        return k["variant"] == static_cast<int>(v) && k["skipped"] == why;
      });
      if (!why.empty() && !said) {
        skipped.push_back({{"variant", static_cast<int>(v)}, {"name", variant_name(v)}, {"skipped", why}, {"points", points}});
      }
      if (!run.gpu->supports(v) || (v == Variant::kAtomic && points > kAtomicSweepCap)) continue;
      run.first.emplace_back(v, run.gpu->train(v));
    }
    if (runs.empty()) {  // variant 8's room depends on the GPU only: the chart draws it as a line
      const OnChipCapacity& room = run.gpu->on_chip_capacity();
      report.json()["on_chip"] = {{"blocks", room.blocks}, {"bytes", room.bytes()}, {"train_points", room.points()}};
    }
    runs.push_back(std::move(run));
  }
  std::vector<SweepRow> rows;
  for (SizeRun& run : runs) {
    const TrainingResult want = run.reference.get();
    for (const auto& [v, first] : run.first) {
      SweepRow row{"cuda", variant_name(v), run.config.points, run.gpu->train_points(), run.config.epochs, run.config.lr};
      row.copy_gbps = copy_gbps;
      const regression::Check c = check_variant(v, first, want);
      row.passed = c.ok && !first.diverged_at;
      row.w = first.w;
      row.b = first.b;
      report.check(row.passed, "variant " + label(v) + " at " + std::to_string(row.points) + " points: " +
                                   (c.ok ? std::string("diverged") : c.failure));
      if (row.passed) {
        const int timed = v == Variant::kAtomic ? std::min(repeats.timed, 3) : repeats.timed;  // ~1 s a run at 5M
        std::vector<double> ms;
        for (int i = 0; i < repeats.warmup + timed; ++i) {
          const double t = run.gpu->train(v).training_ms;
          if (i >= repeats.warmup) ms.push_back(t);
        }
        row.training = summarize(ms);
      }
      out << table_line(row) << "\n";
      rows.push_back(row);
    }
    run.gpu.reset();  // free this size's GPU memory
  }
  for (const auto& k : skipped) {
    out << "  " + label(static_cast<Variant>(k["variant"].get<int>())) + " skipped: " + k["skipped"].get<std::string>() + "\n";
  }
  nlohmann::json& j = report.json();
  j["sweep"] = nlohmann::json::array();
  for (const SweepRow& r : rows) j["sweep"].push_back(to_json(r));
  j["skipped"] = skipped;
  if (!csv.empty()) write_sweep_csv(csv, rows, report);
}

// --barrier: five ways for the blocks of variant 8's grid (one per SM) to meet, each timed
// alone (barrier.cu); beside them, variant 8's epoch at --points, checked first.
void barrier_costs(const Config& config, bool quick, cudaStream_t stream, Report& report) {
  FusedTraining gpu(config, stream);
  if (!gpu.supports(Variant::kOnChip)) {
    report.out() << "barrier: skipped: variant 8 " + gpu.skip_reason(Variant::kOnChip) + "\n";
    return;
  }
  const TrainingResult want = regression::train_reference(gpu.copy_dataset(), config);
  const regression::Check c = check_variant(Variant::kOnChip, gpu.train(Variant::kOnChip), want);
  report.check(c.ok, "variant 8 at " + std::to_string(config.points) + " points: " + c.failure);
  if (!c.ok) return;
  std::vector<double> ms;
  for (int i = 0; i < 7; ++i) ms.push_back(gpu.train(Variant::kOnChip).training_ms);
  ms.erase(ms.begin(), ms.begin() + 2);  // warm-up
  // --quick: few rounds, so that the compute-sanitizer runs of the bench stay short (racecheck
  // follows every post and read of every round: 200 rounds took it 3 minutes on an H200).
  const int rounds = quick ? 20 : 2000;
  const int graph_nodes = std::min(rounds, kMaxBarrierGraphNodes);
  const BarrierCosts b = measure_grid_barriers(gpu.on_chip_capacity().blocks, stream, rounds);
  Table kinds({{"barrier", "barrier"}, {"check", "check"}, {"ns", "ns each", 0}, {"skipped", "skipped"}});
  for (const BarrierCost& k : b.kinds) {
    Table::Row& row = kinds.add_row().set("barrier", k.what);
    if (!k.skipped.empty()) {
      row.set("skipped", k.skipped);
      continue;
    }
    report.check(k.mismatches == 0, k.what + ": " + std::to_string(k.mismatches) + " slots did not hold their round after it");
    row.set("check", k.mismatches == 0 ? "ok" : "FAILED").set("ns", k.ns);
  }
  const double epoch_us = us_per_epoch(config.epochs, median(ms));
  report.out() << format("barrier: %d blocks x %d threads (variant 8's grid), each kind timed alone "
                         "(%d in a row, less an empty launch; the kernel boundary: one node of a graph of %d), each checked "
                         "first (every block posts each round, then reads every block's post):\n",
                         b.blocks, kOnChipThreads, rounds, graph_nodes);
  kinds.print(report.out());
  report.out() << format("variant 8's whole epoch at %lld points (grid.sync(), median of 5): %.2f us\n",
                         static_cast<long long>(config.points), epoch_us);
  report.json()["barrier"] = kinds.json();
  report.json()["barrier_rounds"] = rounds;
  report.json()["barrier_graph_nodes"] = graph_nodes;
  report.json()["barrier_cluster_blocks"] = b.cluster_blocks;
  report.json()["on_chip_epoch_us"] = epoch_us;
}

struct Options {
  CommonOptions common;
  LadderOptions ladder;
  bool sweep = false, breakdown = false, barrier = false;  // none of the modes given: all three
  std::vector<std::int64_t> sizes;
  std::string csv, trace_path;  // empty: not asked for
};

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 05's bench: size sweep, per-kernel breakdown and Chrome trace of the fused variants"};
  add_common_options(app, o.common);
  o.ladder.repeats = 3;
  add_ladder_options(app, o.ladder, "timed runs per variant and size (default 3; 2 with --quick)");
  app.remove_option(app.get_option("--print-every"));  // the lesson's: the bench prints no losses
  std::string sizes_text;
  app.add_flag("--sweep", o.sweep, "every size of --sizes x every variant: checked, then timed");
  app.add_flag("--breakdown", o.breakdown, "per-kernel time of variants 1 and 3 at --points");
  app.add_flag("--barrier", o.barrier, "five ways for variant 8's blocks to meet, and its epoch");
  app.add_option("--trace", o.trace_path, "write a Chrome trace (Perfetto, chrome://tracing) of 3 epochs of variants 1, 3, 4, 6")
      ->type_name("FILE");
  app.add_option("--sizes", sizes_text, "sweep sizes, e.g. 500,5K,5M (default: the article's, plus 100K)")->type_name("LIST");
  app.add_option("--csv", o.csv, "sweep: write the rows as CSV to FILE")->type_name("FILE");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  const bool trace = app.count("--trace") > 0;
  if (!o.sweep && !o.breakdown && !o.barrier && !trace) o.sweep = o.breakdown = o.barrier = true;
  finish_ladder_options(app, o.common.quick, o.ladder);
  if (!o.sweep && (app.count("--sizes") || app.count("--csv"))) throw UsageError("--sizes and --csv need --sweep");
  // Flags that would change nothing in the modes asked for are refused, not ignored.
  if (app.count("--points") && !o.breakdown && !o.barrier && !trace) {
    throw UsageError("--points is the size of --breakdown, --barrier and --trace: --sweep takes --sizes");
  }
  if (app.count("--variant") && !o.sweep && !trace) {
    throw UsageError("--variant picks what --sweep and --trace run: --breakdown and --barrier time variants of their own");
  }
  o.sizes = !sizes_text.empty() ? parse_sizes(sizes_text)
            : o.common.quick    ? std::vector<std::int64_t>{2, 1025, 20'011}
                                : default_sweep_sizes();
  if (app.count("--sizes") && sizes_text.empty()) parse_sizes(sizes_text);  // an empty list is refused
  if (app.count("--csv")) require_output_file("--csv", o.csv, ".csv");
  if (trace) {
    require_output_file("--trace", o.trace_path, ".json");
    require_distinct_outputs("--trace", o.trace_path, "--json", o.common.json.value_or(""));
    trace_layout(o.ladder.variants);  // refuse a selection with nothing to trace before touching the GPU
  }
  (void)pretended_compute_capability();  // a malformed test override is refused before any CUDA call
  return std::nullopt;
}

// The settings every mode shares, as the JSON's top-level values.
void describe_run(const Options& o, double copy_gbps, Report& report) {
  const Config& config = o.ladder.config;
  nlohmann::json& j = report.json();
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, o.common.device));
  j["device"] = prop.name;
  j["quick"] = o.common.quick;
  j["points"] = config.points;  // --breakdown's, --trace's and --barrier's size (the sweep's are its rows')
  j["epochs"] = config.epochs;
  j["lr"] = config.lr;
  j["repeats"] = o.ladder.repeats;
  j["copy_mib"] = o.ladder.copy_mib;
  j["copy_gbps"] = copy_gbps;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  const Config& config = o.ladder.config;
  const int copy_mib = o.ladder.copy_mib;
  use_device(o.common.device);
  Report report("fused_kernels_bench", o.common.json);
  report.out() << "fused_kernels_bench: device " + describe_device(o.common.device) + "\n";
  Stream stream;
  require_gpu_memory("--copy-mib " + std::to_string(copy_mib), ByteCount().add(copy_mib, 1 << 20, 2));
  const double copy_gbps = device_copy_gbps(static_cast<std::size_t>(copy_mib) << 20, stream.get());
  report.out() << format("ceiling: device-to-device copy of %d MiB: %g GB/s (bytes read + written)\n", copy_mib, copy_gbps);
  describe_run(o, copy_gbps, report);
  if (o.sweep) {
    sweep(config, o.sizes, o.ladder.variants, Repeats{o.common.quick ? 1 : 2, o.ladder.repeats}, copy_gbps, o.csv, report);
  }
  if (o.breakdown || !o.trace_path.empty()) {
    FusedTraining gpu(config, stream.get());
    const TrainingResult want = regression::train_reference(gpu.copy_dataset(), config);
    for (const Variant v : {Variant::kUnfused, Variant::kBlockReduce, Variant::kLastBlock, Variant::kStreams}) {
      const regression::Check c = check_variant(v, gpu.train(v), want);  // what is traced is right
      report.check(c.ok, "variant " + label(v) + " at " + std::to_string(config.points) + " points: " + c.failure);
    }
    if (report.passed() && o.breakdown) breakdown(gpu, report);
    if (report.passed() && !o.trace_path.empty()) trace_to_file(gpu, o.ladder.variants, o.trace_path, report);
  }
  if (o.barrier) barrier_costs(config, o.common.quick, stream.get(), report);
  return report.finish();
}

}  // namespace
}  // namespace workbook::fused

int main(int argc, char** argv) {
  return workbook::guarded_main("fused_kernels_bench", [&] { return workbook::fused::run(argc, argv); });
}

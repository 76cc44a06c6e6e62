// main.cpp: chapter 05's program. Trains chapter 04's regression (y = w*X + b, full-batch MSE +
// SGD) with seven variants, from 04's seven kernels per epoch down to one launch for all epochs;
// checks each against 04's float64 reference, then times the training loop alone.
//
//   fused_kernels                            # 5M points, 200 epochs, every variant, H200-sized
//   fused_kernels --variant 4 --points 50M   # one variant
//   fused_kernels --sweep --csv sweep.csv --json sweep.json   # sizes x variants (benchmark mode)
//   fused_kernels --trace trace.json         # + a Chrome trace of 3 epochs of variants 1, 3, 4, 6
#include "cli.h"
#include "compute_capability.h"
#include "epoch_trace.h"
#include "event_timer.h"
#include "fused_kernels.cuh"
#include "gpu_probe.h"
#include "linear_regression.cuh"
#include "nvtx.h"
#include "pipeline.h"  // chapter 03: TraceRecorder
#include "program.h"
#include "regression.h"
#include "report.h"
#include "stats.h"
#include "stream.h"
#include "sweep.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <future>
#include <memory>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace workbook;
using namespace workbook::fused;
using regression::kLossTolerance;
using regression::kParameterTolerance;

// Variant 2's losses are sums of float atomicAdds in arrival order: each of its 32 slots adds
// 125K terms an epoch at 5M points, one after another, so their rounding reaches about 1e-4 of
// the loss (measured up to 1.2e-4 on an H200) where the tree reductions stay near 1e-6. That
// loss of accuracy is part of the lesson, so the variant gets a looser bound, printed beside it;
// its w and b, and every other variant, keep 04's tolerances.
constexpr Tolerance kAtomicLossTolerance{0.0, 1e-3};

double relative_error(double got, double want) { return want == 0.0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want); }

// How one run compares with the float64 reference (04's tolerances, every epoch's loss).
struct Check {
  bool ok = false;
  double w = 0.0, b = 0.0, losses = 0.0, test_mse = 0.0;  // relative errors
  std::string failure;
};

Check check_against(Variant v, const TrainingResult& got, const TrainingResult& want) {
  Check c;
  if (want.diverged_at || got.diverged_at) {
    c.ok = want.diverged_at == got.diverged_at;
    if (!c.ok) c.failure = "diverged at a different epoch than the float64 reference";
    return c;
  }
  c.w = relative_error(got.w, want.w);
  c.b = relative_error(got.b, want.b);
  c.test_mse = relative_error(got.test_mse, want.test_mse);
  const Comparison losses =
      compare(got.losses, want.losses, v == Variant::kAtomic ? kAtomicLossTolerance : kLossTolerance);
  for (std::size_t e = 0; e < got.losses.size() && e < want.losses.size(); ++e) {
    c.losses = std::max(c.losses, relative_error(got.losses[e], want.losses[e]));
  }
  if (!within(got.w, want.w, kParameterTolerance)) c.failure = "w differs from the float64 reference";
  else if (!within(got.b, want.b, kParameterTolerance)) c.failure = "b differs from the float64 reference";
  else if (!losses.ok()) c.failure = "losses differ from the float64 reference: " + losses.summary();
  else if (!within(got.test_mse, want.test_mse, kLossTolerance)) c.failure = "test MSE differs from the float64 reference";
  c.ok = c.failure.empty();
  return c;
}

bool same_bits(const TrainingResult& a, const TrainingResult& b) {
  return a.w == b.w && a.b == b.b && a.losses == b.losses && a.test_mse == b.test_mse;
}

nlohmann::json stats_json(const Stats& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"repeats", s.count}};
}

std::string label(Variant v) { return std::to_string(static_cast<int>(v)) + " " + variant_name(v); }

// Variant 2 takes up to a second per run at 5M points: fewer repeats keep the benchmark short.
constexpr int kAtomicMaxRepeats = 3;

// Warm-up, then `repeats` timed runs (at most 3 for variant 2); every repeat of a deterministic variant must give the same bits.
Stats time_variant(FusedRegression& gpu, Variant v, const TrainingResult& first, Repeats repeats, Report& report) {
  NvtxRange range("timed runs");
  if (v == Variant::kAtomic) repeats.timed = std::min(repeats.timed, kAtomicMaxRepeats);
  std::vector<double> ms;
  for (int i = 0; i < repeats.warmup + repeats.timed; ++i) {
    const TrainingResult t = gpu.train(v);
    if (i >= repeats.warmup) ms.push_back(t.training_ms);
    if (is_deterministic(v)) report.check(same_bits(t, first), "variant " + label(v) + ": a repeated run gave other bits");
  }
  return summarize(ms);
}

struct Options {
  Config config;
  std::string variants = "all";
  bool sweep = false;
  std::string sizes;
  std::string csv;
  int repeats = 0;
  int copy_mib = 1024;
  std::string trace_path;
};

// The device facts the report starts with.
std::string describe_device(int index, int* multiprocessors) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  *multiprocessors = prop.multiProcessorCount;
  std::ostringstream s;
  s << prop.name << " (" << prop.multiProcessorCount << " SMs, " << prop.l2CacheSize / 1048576 << " MiB L2, cc "
    << prop.major << "." << prop.minor << ")";
  if (compute_capability_is_pretended(index)) {
    s << ", treated as cc " << device_compute_capability(index).text() << " (" << kPretendCapabilityVariable << ")";
  }
  return s.str();
}

// --trace: after every timed run, a separate pass per traceable variant: warm-up epochs, then
// kTracedEpochs epochs with chapter 03's pair of CUDA events around each GPU operation, written
// with 03's Chrome-trace writer (one track per variant and stream).
void record_trace(const std::string& path, const TraceLayout& layout, FusedRegression& gpu, int config_epochs,
                  Report& report) {
  NvtxRange range("trace");
  const int epochs = std::min(kTracedEpochs, config_epochs);
  const int warmup = std::min(kTraceWarmupEpochs, config_epochs - epochs);
  streams_events::TraceRecorder recorder(layout.tracks);
  for (std::size_t i = 0; i < layout.variants.size(); ++i) {
    gpu.trace_epochs(layout.variants[i], warmup, epochs, recorder, layout.first_track[i]);
  }
  const std::vector<streams_events::TraceOp> ops = recorder.ops();
  streams_events::write_chrome_trace(path, ops, layout.tracks);
  std::ostream& out = report.out();
  out << "trace: " << epochs << " epochs per variant after " << warmup
      << " warm-up, a pair of CUDA events around each GPU operation (untimed pass):\n"
      << "  variant" << std::string(10, ' ') << "ops/epoch  epoch on the GPU" << std::string(8, ' ') << "some op running\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const TracedVariant& t : summarize_trace(ops, layout, epochs)) {
    out << "  " << std::left << std::setw(15) << label(t.variant) << std::right << std::setw(11)
        << t.ops / epochs << std::fixed << std::setprecision(2) << std::setw(15) << t.epoch_us << " us"
        << std::setw(14) << t.busy_us << " us" << std::setw(5) << std::setprecision(0)
        << (t.epoch_us > 0 ? 100.0 * t.busy_us / t.epoch_us : 0.0) << "%\n"
        << std::defaultfloat;
    rows.push_back({{"variant", static_cast<int>(t.variant)}, {"name", variant_name(t.variant)}, {"ops", t.ops},
                    {"epoch_us", t.epoch_us}, {"busy_us", t.busy_us}});
  }
  out << "trace: " << ops.size() << " operations on " << layout.tracks.size() << " tracks written to " << path << "\n";
  report.json()["trace"] = {{"path", path},         {"epochs", epochs},     {"warmup_epochs", warmup},
                            {"operations", ops.size()}, {"tracks", layout.tracks}, {"variants", rows}};
}

int run_single(const Options& o, const std::vector<Variant>& variants, Repeats repeats, Report& report,
               const std::string& device_name) {
  std::ostream& out = report.out();
  nlohmann::json& j = report.json();
  const Config& config = o.config;
  const std::size_t copy_bytes = static_cast<std::size_t>(o.copy_mib) << 20;
  // The data and, while it is held, the two buffers of the ceiling's copy: asked before either is taken.
  ByteCount need = regression::gpu_bytes_needed(config.points, config.epochs);
  need.add(static_cast<std::int64_t>(copy_bytes), 1, 2);
  require_gpu_memory("--points " + std::to_string(config.points) + " with --copy-mib " + std::to_string(o.copy_mib),
                     need);
  Stream stream;
  FusedRegression gpu(config, stream.get());
  const regression::Split split = regression::split_of(config.points);
  out << "fused_kernels: y = w*X + b by full-batch SGD, " << config.points << " points (" << split.train << " train, "
      << split.test << " test), " << config.epochs << " epochs, lr " << config.lr << ", noise " << config.noise
      << "\ndevice: " << device_name << "\n";
  j["mode"] = "single";
  j["points"] = config.points;
  j["train_points"] = split.train;
  j["epochs"] = config.epochs;
  j["lr"] = config.lr;
  j["noise"] = config.noise;

  // 1. Reference: 04's float64 recurrence on the GPU's own float32 data.
  regression::TrainingResult want;
  {
    NvtxRange range("reference");
    want = regression::train_reference(gpu.copy_dataset(), config);
  }
  if (!want.diverged_at) {
    out << std::setprecision(9) << "reference (float64, chapter 04): w " << want.w << ", b " << want.b << ", test MSE "
        << want.test_mse << "\n";
    j["reference"] = {{"w", want.w}, {"b", want.b}, {"test_mse", want.test_mse}};
  }

  // 2. Check every variant before any is timed.
  out << "check against the reference (relative errors; tolerance w, b " << kParameterTolerance.rel << ", losses "
      << kLossTolerance.rel << " (variant 2, float atomics: " << kAtomicLossTolerance.rel << ")):\n";
  std::vector<TrainingResult> first(variants.size());
  std::vector<bool> ok(variants.size(), false);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const Variant v = variants[i];
    const LaunchShape s = gpu.shape(v);
    out << "  " << std::left << std::setw(15) << label(v) << std::right;
    if (!gpu.supports(v)) {  // a row all the same, so that the JSON says which variant and why
      out << "skipped: " << gpu.skip_reason(v) << "\n";
      rows.push_back({{"variant", static_cast<int>(v)}, {"name", variant_name(v)}, {"detail", variant_detail(v)},
                      {"skipped", gpu.skip_reason(v)}});
      continue;
    }
    first[i] = gpu.train(v);
    const Check c = check_against(v, first[i], want);
    ok[i] = c.ok;
    out << std::setprecision(2) << std::scientific << "w " << c.w << "  b " << c.b << "  losses " << c.losses
        << "  test " << c.test_mse << std::defaultfloat << "  " << (c.ok ? "ok" : "FAILED") << "   " << s.blocks
        << " x " << s.threads << ", " << s.launches_per_epoch << " launches/epoch\n";
    report.check(c.ok, "variant " + label(v) + ": " + c.failure);
    rows.push_back({{"variant", static_cast<int>(v)}, {"name", variant_name(v)}, {"detail", variant_detail(v)},
                    {"blocks", s.blocks}, {"threads", s.threads}, {"launches_per_epoch", s.launches_per_epoch},
                    {"w", first[i].w}, {"b", first[i].b}, {"test_mse", first[i].test_mse}, {"passed", c.ok},
                    {"relative_error", {{"w", c.w}, {"b", c.b}, {"losses", c.losses}, {"test_mse", c.test_mse}}}});
  }
  // The losses of the last variant that ran (variant 7 is skipped on GPUs older than Hopper).
  std::size_t last_run = variants.size();
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (gpu.supports(variants[i])) last_run = i;
  }
  if (!want.diverged_at && last_run < variants.size() && !first[last_run].losses.empty()) {
    const TrainingResult& shown = first[last_run];
    out << "losses of variant " << label(variants[last_run]) << " (read after training; no syncs in the loop):\n";
    for (int e : regression::printed_epochs(static_cast<int>(shown.losses.size()), config.print_every)) {
      out << "  epoch " << std::setw(4) << e << "  loss " << std::setprecision(7) << shown.losses[e] << "\n";
    }
  }
  if (want.diverged_at) {
    out << "diverged at epoch " << *want.diverged_at << " (reference and variants agree); nothing to time\n";
    report.check(false, "diverged at epoch " + std::to_string(*want.diverged_at));
  }
  if (!report.passed()) {
    j["variants"] = rows;
    return report.finish();
  }

  // 3. The ceiling, then time each variant: the epoch loop alone, warm-up, median of repeats.
  const double copy_gbps = measure_copy_gbps(copy_bytes, stream.get());
  out << std::setprecision(4) << "ceiling: device-to-device copy of " << o.copy_mib << " MiB: " << copy_gbps
      << " GB/s (bytes read + written)\n";
  j["copy_bytes"] = copy_bytes;
  j["copy_gbps"] = copy_gbps;
  out << "training time, " << config.epochs << " epochs (median of " << repeats.timed << " runs after "
      << repeats.warmup << " warm-up, CUDA events, the epoch loop only):\n"
      << "  variant              ms      min      max   us/epoch     GB/s  of copy  vs unfused\n";
  double unfused_ms = 0.0;
  for (std::size_t i = 0; i < variants.size(); ++i) {  // rows[i] is variants[i]'s row, skipped or not
    const Variant v = variants[i];
    if (!gpu.supports(v)) {
      out << "  " << std::left << std::setw(15) << label(v) << std::right << "   skipped (see the check above)\n";
      continue;
    }
    const Stats t = time_variant(gpu, v, first[i], repeats, report);
    if (v == Variant::kUnfused) unfused_ms = t.median;
    const double gbps = achieved_gbps(split.train, config.epochs, t.median);
    out << "  " << std::left << std::setw(15) << label(v) << std::right << std::fixed << std::setprecision(3)
        << std::setw(9) << t.median << std::setw(9) << t.min << std::setw(9) << t.max << std::setw(11)
        << std::setprecision(2) << us_per_epoch(config.epochs, t.median) << std::setw(9) << std::setprecision(0)
        << gbps << std::setw(8) << std::setprecision(1) << 100.0 * gbps / copy_gbps << "%";
    if (unfused_ms > 0) out << std::setw(11) << std::setprecision(1) << unfused_ms / t.median << "x";
    out << "\n" << std::defaultfloat;
    rows[i]["training_ms"] = stats_json(t);
    rows[i]["us_per_epoch"] = us_per_epoch(config.epochs, t.median);
    rows[i]["gbps"] = gbps;
    rows[i]["copy_fraction"] = gbps / copy_gbps;
  }
  out << "repeated runs: every variant but 2 (float atomics) bit-identical in every run\n";
  j["variants"] = rows;

  // 4. Where an epoch's time goes: 04's four steps against the fused kernel and its update.
  nlohmann::json per_epoch = nlohmann::json::object();
  for (Variant v : {Variant::kUnfused, Variant::kBlockReduce}) {
    if (std::find(variants.begin(), variants.end(), v) == variants.end()) continue;
    const Breakdown steps = gpu.breakdown(v);
    double total = 0.0;
    for (const auto& step : steps) total += step.second;
    out << "per-epoch time of each kernel, variant " << label(v) << " (median over the epochs, CUDA events):\n";
    nlohmann::json entry = nlohmann::json::object();
    for (const auto& [name, ms] : steps) {
      out << "  " << std::left << std::setw(14) << name << std::right << std::fixed << std::setprecision(2)
          << std::setw(9) << ms * 1e3 << " us" << std::setw(7) << std::setprecision(1) << 100.0 * ms / total << "%\n"
          << std::defaultfloat;
      entry[name] = ms;
    }
    entry["total"] = total;
    per_epoch[v == Variant::kUnfused ? "unfused" : "fused"] = entry;
  }
  j["per_epoch_ms"] = per_epoch;

  // 5. --trace: what the GPU does inside a few epochs, recorded apart from the timed runs.
  if (!o.trace_path.empty()) record_trace(o.trace_path, trace_layout(variants), gpu, config.epochs, report);
  return report.finish();
}

int run_sweep(const Options& o, const std::vector<Variant>& variants, Repeats repeats, Report& report,
              const std::string& device_name, bool quick) {
  std::ostream& out = report.out();
  nlohmann::json& j = report.json();
  const std::vector<std::int64_t> sizes =
      !o.sizes.empty() ? parse_sizes(o.sizes) : quick ? std::vector<std::int64_t>{2, 1025, 20'011} : default_sweep_sizes();
  Stream stream;
  const std::size_t copy_bytes = static_cast<std::size_t>(o.copy_mib) << 20;
  require_gpu_memory("--copy-mib " + std::to_string(o.copy_mib), ByteCount().add(o.copy_mib, 1 << 20, 2));
  const double copy_gbps = measure_copy_gbps(copy_bytes, stream.get());
  out << "fused_kernels --sweep: " << sizes.size() << " sizes x " << variants.size() << " variants, " << o.config.epochs
      << " epochs, median of " << repeats.timed << " runs after " << repeats.warmup << " warm-up\ndevice: "
      << device_name << "\n"
      << std::setprecision(4) << "ceiling: device-to-device copy of " << o.copy_mib << " MiB: " << copy_gbps
      << " GB/s (bytes read + written)\n"
      << "lr: " << o.config.lr << " up to " << kArticlePoints << " points, scaled by (5M/N)^2 above (sweep_lr)\n"
      << "       points  variant             ms   us/epoch      GB/s  of copy\n";
  // Pass 1, per size: data on the GPU, 04's float64 reference started on a host thread (the
  // large sizes take seconds each, so they run side by side), and the first run of every variant.
  struct SizeRun {
    Config config;
    std::unique_ptr<FusedRegression> gpu;
    std::future<TrainingResult> reference;
    std::vector<std::pair<Variant, TrainingResult>> first;
  };
  std::vector<SizeRun> runs;
  nlohmann::json skipped = nlohmann::json::array();  // variants this GPU cannot run, once each, with why
  for (const std::int64_t points : sizes) {
    SizeRun run;
    run.config = o.config;
    run.config.points = points;
    run.config.lr = sweep_lr(o.config.lr, points);
    regression::validate(run.config);
    regression::require_gpu_memory(points, run.config.epochs);  // the sizes before it are still held
    run.gpu = std::make_unique<FusedRegression>(run.config, stream.get());
    run.reference = std::async(std::launch::async, [data = run.gpu->copy_dataset(), config = run.config] {
      return regression::train_reference(data, config);
    });
    for (const Variant v : variants) {
      if (!run.gpu->supports(v) && runs.empty()) {  // the same for every size: the GPU decides
        skipped.push_back({{"variant", static_cast<int>(v)}, {"name", variant_name(v)}, {"skipped", run.gpu->skip_reason(v)}});
      }
      if (!run.gpu->supports(v) || (v == Variant::kAtomic && points > kAtomicSweepCap)) continue;
      run.first.emplace_back(v, run.gpu->train(v));
    }
    runs.push_back(std::move(run));
  }
  // Pass 2: check every first run against the reference, then time those that passed.
  std::vector<SweepRow> rows;
  for (SizeRun& run : runs) {
    const TrainingResult want = [&] {
      NvtxRange range("reference");
      return run.reference.get();
    }();
    const std::int64_t points = run.config.points;
    for (const auto& [v, first] : run.first) {
      SweepRow row;
      row.implementation = "cuda";
      row.variant = variant_name(v);
      row.points = points;
      row.train_points = run.gpu->train_points();
      row.epochs = run.config.epochs;
      row.lr = run.config.lr;
      row.copy_gbps = copy_gbps;
      const Check c = check_against(v, first, want);
      row.passed = c.ok && !first.diverged_at;
      row.w = first.w;
      row.b = first.b;
      report.check(row.passed, "variant " + label(v) + " at " + std::to_string(points) + " points: " +
                                   (c.ok ? std::string("diverged") : c.failure));
      if (row.passed) {
        const Stats t = time_variant(*run.gpu, v, first, repeats, report);
        row.median_ms = t.median;
        row.min_ms = t.min;
        row.max_ms = t.max;
        row.repeats = static_cast<int>(t.count);
      }
      const double gbps = row.passed ? achieved_gbps(row.train_points, row.epochs, row.median_ms) : 0.0;
      out << std::setw(13) << points << "  " << std::left << std::setw(15) << label(v) << std::right << std::fixed
          << std::setprecision(3) << std::setw(9) << row.median_ms << std::setw(11) << std::setprecision(2)
          << (row.passed ? us_per_epoch(row.epochs, row.median_ms) : 0.0) << std::setw(10) << std::setprecision(0)
          << gbps << std::setw(8) << std::setprecision(1) << 100.0 * gbps / copy_gbps << "%"
          << (row.passed ? "" : "  FAILED check") << "\n"
          << std::defaultfloat;
      rows.push_back(row);
    }
    run.gpu.reset();  // free this size's GPU memory
  }
  for (const auto& k : skipped) {
    out << "  " << label(static_cast<Variant>(k["variant"].get<int>())) << " skipped: " << k["skipped"].get<std::string>()
        << "\n";
  }
  j["mode"] = "sweep";
  j["copy_bytes"] = copy_bytes;
  j["copy_gbps"] = copy_gbps;
  j["epochs"] = o.config.epochs;
  j["rows"] = nlohmann::json::array();
  for (const SweepRow& r : rows) j["rows"].push_back(to_json(r));
  j["skipped"] = skipped;
  if (!o.csv.empty()) {
    std::ofstream file(o.csv);
    write_csv(file, rows);
    if (!file) throw std::runtime_error("cannot write " + o.csv);
    out << "wrote " << o.csv << "\n";
  }
  return report.finish();
}

int run(int argc, char** argv) {
  CLI::App app{"Chapter 05: chapter 04's regression fused into one kernel per epoch, then one launch in all"};
  CommonOptions common;
  add_common_options(app, common);
  Options o;
  add_size_option(app, "--points", o.config.points,
                  "number of points N, e.g. 5000000 or 5M (X = i * 2e-6, first 80% train)");
  app.add_option("--epochs", o.config.epochs, "full-batch gradient-descent epochs")->type_name("E");
  app.add_option("--lr", o.config.lr, "SGD learning rate (the sweep scales it above 5M points)")->type_name("LR");
  app.add_option("--noise", o.config.noise, "standard deviation of Gaussian noise on y (cuRAND)")->type_name("SIGMA");
  add_seed_option(app, o.config.seed, "cuRAND seed of the noise");
  app.add_option("--print-every", o.config.print_every, "show the loss every this many epochs")->type_name("K");
  app.add_option("--variant", o.variants, "all, or a list of 1-7 (e.g. 1,4,7)")->type_name("V");
  app.add_flag("--sweep", o.sweep, "benchmark mode: every size of --sizes x every variant");
  app.add_option("--sizes", o.sizes, "sweep sizes, e.g. 500,5K,5M (default: the article's, plus 100K)")->type_name("LIST");
  app.add_option("--csv", o.csv, "sweep: write the rows as CSV to FILE")->type_name("FILE");
  app.add_option("--repeats", o.repeats, "timed runs per variant (default 10; 3 in the sweep; 2 with --quick)")->type_name("R");
  add_size_option(app, "--copy-mib", o.copy_mib, "size in MiB of the device-to-device copy that gives the ceiling");
  app.add_option("--trace", o.trace_path,
                 "after the timing, write a Chrome trace (Perfetto, chrome://tracing) of 3 epochs of variants 1, 3, 4, 6")
      ->type_name("FILE");
  if (auto code = parse_command_line(app, argc, argv)) return *code;
  if (common.quick && app.count("--points") == 0) o.config.points = 20'011;  // odd, not a block multiple
  if (common.quick && app.count("--epochs") == 0) o.config.epochs = 20;
  if (common.quick && app.count("--copy-mib") == 0) o.copy_mib = 64;
  regression::validate(o.config);
  const std::vector<Variant> variants = parse_variants(o.variants);
  if (app.count("--repeats")) require_at_least("--repeats", o.repeats, 1);
  require_at_least("--copy-mib", o.copy_mib, 1);
  require_at_most("--copy-mib", o.copy_mib, 16384);
  if (!o.sweep && (app.count("--sizes") || app.count("--csv"))) throw UsageError("--sizes and --csv need --sweep");
  if (o.sweep && app.count("--points")) throw UsageError("--sweep takes its point counts from --sizes, not --points");
  if (app.count("--sizes")) parse_sizes(o.sizes);  // refuse bad sizes (an empty list too) before touching the GPU
  if (app.count("--csv") && o.csv.empty()) throw UsageError("--csv needs a file name");
  if (o.sweep && app.count("--trace")) throw UsageError("--trace records the single mode's training loop, not --sweep");
  if (app.count("--trace")) {
    if (o.trace_path.empty()) throw UsageError("--trace needs a file name");
    trace_layout(variants);  // refuse a selection with nothing to trace before touching the GPU
  }
  const int timed = o.repeats > 0 ? o.repeats : common.quick ? 2 : o.sweep ? 3 : 10;
  const Repeats repeats{common.quick ? 1 : 2, timed};

  (void)pretended_compute_capability();  // a malformed test override is refused before anything is printed
  use_device(common.device);
  int multiprocessors = 0;
  const std::string device_name = describe_device(common.device, &multiprocessors);
  Report report("fused_kernels", common.json);
  report.json()["device"] = common.device;
  report.json()["device_name"] = device_name;
  report.json()["multiprocessors"] = multiprocessors;
  return o.sweep ? run_sweep(o, variants, repeats, report, device_name, common.quick)
                 : run_single(o, variants, repeats, report, device_name);
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("fused_kernels", [&] { return run(argc, argv); });
}

// bench_regression.cpp: chapter 04's measuring harness, beside the lesson (linear_regression.cu),
// whose launchers and CPU twins it links. It answers the article's per-operation chart: how long
// each step of one epoch takes (forward, loss, backward, SGD step), and what bandwidth the three
// data steps reach against a device-to-device copy of the same GPU.
//
//   linear_regression_bench                          # the GPU's steps at 5M points, 200 epochs
//   linear_regression_bench --device cpu --json cpu_steps.json
//   linear_regression_bench --batch-sizes 4K,64K,1M  # part 2: each pipeline's epoch against the batch size
//   linear_regression_bench --batch-sizes 64K --shuffle --trace trace.json   # and 8 steps of each on a timeline
//   linear_regression_bench --sync-every 1,10,200    # what loss.item() every k epochs costs
//   linear_regression_bench --copy-sizes 64K,256K,1M # a copy's share of the bus at a batch's size, five ways
//
// A pair of CUDA events around each launcher call (the host clock around each twin on the CPU);
// the median of each step over the epochs. The run is checked against the float64 reference
// before its times are shown.
#include "cli.h"
#include "compute_capability.h"
#include "copy_ceiling.h"
#include "cuda_check.h"
#include "format.h"
#include "gpu_probe.h"
#include "linear_regression.h"
#include "minibatch.h"
#include "nvtx.h"
#include "program.h"
#include "regression_cli.h"
#include "regression_data.h"
#include "report.h"
#include "small_copies.h"
#include "stats.h"
#include "stream.h"
#include "table.h"
#include "trace.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace workbook::linear_regression {
namespace {

constexpr std::array<const char*, 4> kSteps = {"forward", "loss", "backward", "step"};
// Float arrays of the training set each step reads or writes: forward reads x and writes pred;
// the loss reads pred and y; the backward pass reads pred, y and x; the step touches 4 floats.
constexpr std::array<int, 4> kArraysMoved = {2, 2, 3, 0};

struct StepTimes {
  std::array<std::vector<double>, 4> ms;  // ms[k][epoch]
  std::vector<double> total_ms() const {  // each epoch's four steps together
    std::vector<double> total(ms[0].size(), 0.0);
    for (const auto& step : ms) {
      for (std::size_t e = 0; e < step.size(); ++e) total[e] += step[e];
    }
    return total;
  }
  TrainingResult result;                  // checked against the reference before the times count
};

// The GPU epoch loop of GpuRegression::train with an event between the steps, on its own buffers.
StepTimes gpu_step_times(const Config& config, cudaStream_t stream) {
  NvtxRange range("gpu steps");
  const Split split = split_of(config.points);
  const std::int64_t n = split.train;
  DeviceBuffer<float> x(config.points), y(config.points), pred(config.points);
  DeviceBuffer<float> partials(2 * reduction_blocks(config.points)), params(2), grads(2), losses(config.epochs), test(1);
  {
    const DeviceBuffer<float> noise = make_noise_on_gpu(config, stream);
    launch_make_data(x.data(), y.data(), noise.data(), config.noise, 0, config.points, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));  // before the noise is freed
  }
  // On `stream`: a non-blocking stream does not wait for the legacy stream plain cudaMemcpy uses.
  const float initial[2] = {kInitialW, kInitialB};
  CUDA_CHECK(cudaMemcpyAsync(params.data(), initial, sizeof initial, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<Event> marks;
  for (int i = 0; i < 5 * config.epochs; ++i) marks.emplace_back(EventTiming::kEnabled);
  const float lr = static_cast<float>(config.lr);
  for (int e = 0; e < config.epochs; ++e) {
    Event* m = &marks[5 * e];
    m[0].record(stream);
    launch_forward(x.data(), params.data(), pred.data(), n, stream);
    m[1].record(stream);
    launch_mse_loss(pred.data(), y.data(), n, partials.data(), losses.data() + e, stream);
    m[2].record(stream);
    launch_mse_backward(pred.data(), y.data(), x.data(), n, partials.data(), grads.data(), stream);
    m[3].record(stream);
    launch_sgd_step(params.data(), grads.data(), lr, stream);
    m[4].record(stream);
  }
  launch_forward(x.data() + n, params.data(), pred.data() + n, split.test, stream);
  launch_mse_loss(pred.data() + n, y.data() + n, split.test, partials.data(), test.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));

  StepTimes t;
  for (int e = 0; e < config.epochs; ++e) {
    for (int k = 0; k < 4; ++k) t.ms[k].push_back(elapsed_ms(marks[5 * e + k], marks[5 * e + k + 1]));
  }
  std::vector<float> host_losses(config.epochs);
  float w_b[2] = {}, test_mse = 0.0f;
  CUDA_CHECK(cudaMemcpy(host_losses.data(), losses.data(), losses.bytes(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(w_b, params.data(), sizeof w_b, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&test_mse, test.data(), sizeof test_mse, cudaMemcpyDeviceToHost));
  t.result.losses.assign(host_losses.begin(), host_losses.end());
  t.result.w = w_b[0];
  t.result.b = w_b[1];
  t.result.test_mse = test_mse;
  return t;
}

// The CPU loop of train_cpu with the host clock around each twin.
StepTimes cpu_step_times(const Dataset& data, const Config& config) {
  const std::int64_t n = data.split.train;
  const float lr = static_cast<float>(config.lr);
  std::vector<float> pred(data.x.size());
  float w = kInitialW, b = kInitialB, grad_w = 0.0f, grad_b = 0.0f;
  StepTimes t;
  auto timed = [&t](int k, const std::function<void()>& step) {
    const auto start = std::chrono::steady_clock::now();
    step();
    t.ms[k].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  };
  for (int e = 0; e < config.epochs; ++e) {
    timed(0, [&] { forward_cpu(data.x.data(), w, b, pred.data(), n); });
    timed(1, [&] { t.result.losses.push_back(mse_loss_cpu(pred.data(), data.y.data(), n)); });
    timed(2, [&] { mse_backward_cpu(pred.data(), data.y.data(), data.x.data(), n, &grad_w, &grad_b); });
    timed(3, [&] {
      sgd_step_cpu(&w, grad_w, lr);
      sgd_step_cpu(&b, grad_b, lr);
    });
  }
  forward_cpu(data.x.data() + n, w, b, pred.data() + n, data.split.test);
  t.result.test_mse = mse_loss_cpu(pred.data() + n, data.y.data() + n, data.split.test);
  t.result.w = w;
  t.result.b = b;
  return t;
}

// --trace FILE: a few steps of every pipeline on a timeline. One more run of each, untimed (its
// events would cost the sweep time) and checked like the others, with a pair of CUDA events around
// the copy and the step of the first kTracedSteps steps of its last epoch (minibatch.h's
// StepTrace). Two tracks per pipeline, its copy and its compute stream; pipelines 1 and 2 queue
// their copies on the compute stream, so their copy stream's track stays empty, and pipeline 5's
// shows one copy, of the group of batches the traced steps start.
constexpr int kTracedSteps = 8;

void trace_pipelines(const Dataset& data, const Config& config, const BatchPlan& plan, const TrainingResult& want,
                     int fill_threads, cudaStream_t compute, cudaStream_t copy, const std::string& path,
                     Report& report) {
  NvtxRange range("trace");
  std::vector<std::string> tracks;  // "3 ring: copy stream": 03's plot_trace.py draws a panel per pipeline
  for (int k = 1; k <= kPipelineCount; ++k) {
    const std::string pipeline = std::to_string(k) + " " + pipeline_name(static_cast<Pipeline>(k));
    tracks.push_back(pipeline + ": copy stream");
    tracks.push_back(pipeline + ": compute stream");
  }
  TraceRecorder recorder(tracks);
  // Time zero; every traced copy and step follows it, since each run waits for the device before its first.
  recorder.mark_origin(compute);
  for (int k = 1; k <= kPipelineCount; ++k) {
    const Pipeline p = static_cast<Pipeline>(k);
    const StepTrace hook{&recorder, 2 * k - 1, 2 * k - 2, kTracedSteps};
    const MinibatchRun run = train_minibatch_gpu(data, config, plan, p, fill_threads, compute, copy, hook);
    const Check c = check_minibatch(run.result, want);
    report.check(c.ok, std::string("traced ") + pipeline_name(p) + ": " + c.failure);
  }
  const std::vector<TraceOp> ops = recorder.ops();
  write_chrome_trace(path, ops, tracks);

  Table table({{"pipeline", "pipeline"}, {"steps", "steps"}, {"traced_us", "traced us", 1},
               {"copy_busy_percent", "copy busy %", 1}, {"compute_busy_percent", "compute busy %", 1},
               {"idle_percent", "idle %", 1}, {"copy_hidden_percent", "copy hidden %", 1}});
  for (int k = 1; k <= kPipelineCount; ++k) {
    std::vector<TraceOp> mine;
    for (const TraceOp& op : ops) {
      if (op.track / 2 == k - 1) mine.push_back(op);
    }
    const auto traced = std::count_if(mine.begin(), mine.end(), [](const TraceOp& op) { return op.category == "compute"; });
    const OverlapShares s = overlap_shares(mine);
    table.add_row().set("pipeline", std::to_string(k) + " " + pipeline_name(static_cast<Pipeline>(k)))
        .set("steps", static_cast<std::int64_t>(traced)).set("traced_us", s.wall_us)
        .set("copy_busy_percent", 100.0 * s.copy_busy).set("compute_busy_percent", 100.0 * s.compute_busy)
        .set("idle_percent", 100.0 * s.idle).set("copy_hidden_percent", 100.0 * s.copy_hidden);
  }
  const std::int64_t steps = std::min<std::int64_t>(kTracedSteps, batch_count(data.split.train, plan.batch_size));
  report.out() << format("trace: the first %lld steps of the last epoch of one more run of each pipeline (untimed, "
                         "checked), a pair of CUDA events around each copy and each step;\n",
                         static_cast<long long>(steps))
               << "busy: some copy (or step) running, as a share of the traced time; copy hidden: the share of the"
               << " copy time with a step running beside it:\n";
  table.print(report.out());
  report.out() << format("trace: %zu operations on %zu tracks written to %s\n", ops.size(), tracks.size(), path.c_str());
  report.json()["trace"] = {{"path", path}, {"steps", steps}, {"operations", ops.size()}, {"tracks", tracks},
                            {"pipelines", table.json()}};
}

// Part 2's sweep: every pipeline at every batch size, each run checked against the float64
// reference of its batch order, then its epoch time against the PCIe bound. Where launch and
// copy latency stop hiding shows as the batch size falls.
void batch_size_sweep(const Config& config, const std::vector<std::int64_t>& sizes, bool shuffle, int fill_threads,
                      const std::string& trace_path, Report& report) {
  const Dataset data = make_dataset_cpu(config);
  const std::int64_t n = data.split.train;
  Stream compute, copy;
  const double bound_gbps = pinned_h2d_gbps(n * sizeof(float), copy.get());
  const double bound_ms = 8.0 * n / (bound_gbps * 1e6);
  report.out() << format("mini-batch sweep: %lld training points in host memory, %d epochs; PCIe bound %g GB/s, "
                         "%g ms an epoch\n", static_cast<long long>(n), config.epochs, bound_gbps, bound_ms);
  report.json()["pcie_bound_gbps"] = bound_gbps;
  Table table({{"batch_size", "batch"}, {"pipeline", "pipeline"}, {"epoch_ms", "ms/epoch", 4, Column::Style::kTiming},
               {"copy_share", "copy busy %", 1}, {"bound_percent", "% of PCIe bound", 1}, {"check", "check"}});
  TrainingResult want;  // the last size's, for --trace (which takes one size)
  for (const std::int64_t size : sizes) {
    const BatchPlan plan{size, shuffle, config.seed};
    validate(plan, n, config.epochs);
    want = train_minibatch_reference(data, config, plan);
    for (int k = 1; k <= kPipelineCount; ++k) {
      const Pipeline p = static_cast<Pipeline>(k);
      const MinibatchRun first = train_minibatch_gpu(data, config, plan, p, fill_threads, compute.get(), copy.get());
      const Check c = check_minibatch(first.result, want);
      report.check(c.ok, std::string(pipeline_name(p)) + " at batch " + std::to_string(size) + ": " + c.failure);
      Table::Row& row = table.add_row().set("batch_size", size).set("pipeline", pipeline_name(p));
      row.set("check", c.ok ? "ok" : "FAILED");
      if (!c.ok) continue;
      // The checked run was the warm-up; one more is timed.
      const MinibatchRun run = train_minibatch_gpu(data, config, plan, p, fill_threads, compute.get(), copy.get());
      const double epoch_ms = run.ms / config.epochs;
      row.set("epoch_ms", timing(summarize({epoch_ms}))).set("copy_share", 100.0 * run.copy_busy_ms / run.last_epoch_ms);
      row.set("bound_percent", 100.0 * bound_ms / epoch_ms);
    }
  }
  table.print(report.out());
  report.json()["batch_sweep"] = table.json();
  if (!trace_path.empty() && report.passed()) {
    trace_pipelines(data, config, BatchPlan{sizes.back(), shuffle, config.seed}, want, fill_threads, compute.get(),
                    copy.get(), trace_path, report);
  }
}

// The cost of a synchronization point: the lesson's loop reads the loss (loss.item()) every k
// epochs and the host waits for it; with k = 1 the GPU idles for a round trip every epoch.
void sync_cost(const Config& base, const std::vector<std::int64_t>& every, Report& report) {
  Stream stream;
  Table table({{"sync_every", "loss read every"}, {"syncs", "host waits"}, {"training_ms", "ms", 3, Column::Style::kTiming},
               {"us_per_epoch", "us/epoch", 2}, {"extra_us_per_sync", "us per wait", 2}, {"check", "check"}});
  std::optional<double> fewest_ms;  // the run with the fewest waits, for the cost of one more
  std::int64_t fewest_syncs = 0;
  std::vector<std::pair<std::int64_t, double>> timed;
  for (const std::int64_t k : every) {
    Config config = base;
    config.print_every = static_cast<int>(k);
    GpuRegression gpu(config, stream.get());
    const TrainingResult want = train_reference(gpu.copy_dataset(), config);
    const Check c = check_against(gpu.train(), want);
    report.check(c.ok, "--sync-every " + std::to_string(k) + ": " + c.failure);
    const std::int64_t syncs = (config.epochs + k - 1) / k;
    Table::Row& row = table.add_row().set("sync_every", k).set("syncs", syncs).set("check", c.ok ? "ok" : "FAILED");
    if (!c.ok) continue;
    std::vector<double> ms;
    for (int i = 0; i < 7; ++i) ms.push_back(gpu.train().training_ms);
    ms.erase(ms.begin(), ms.begin() + 2);  // warm-up
    const double t = median(ms);
    row.set("training_ms", timing(summarize(ms))).set("us_per_epoch", 1e3 * t / config.epochs);
    timed.emplace_back(syncs, t);
    if (!fewest_ms || syncs < fewest_syncs) {
      fewest_ms = t;
      fewest_syncs = syncs;
    }
  }
  for (std::size_t i = 0, r = 0; i < table.rows().size(); ++i) {
    if (!table.rows()[i].cells().contains("training_ms")) continue;
    const auto [syncs, t] = timed[r++];
    if (syncs > fewest_syncs) table.rows()[i].set("extra_us_per_sync", 1e3 * (t - *fewest_ms) / (syncs - fewest_syncs));
  }
  report.out() << format("the loss read back every k epochs (%d epochs, median of 5 runs, CUDA events around the loop):\n",
                         base.epochs);
  table.print(report.out());
  report.json()["sync_cost"] = table.json();
}

struct Options {
  RunOptions run;
  std::vector<std::int64_t> batch_sizes;  // --batch-sizes: part 2's sweep
  std::vector<std::int64_t> sync_every;   // --sync-every: the cost of reading the loss
  std::vector<std::int64_t> copy_sizes;   // --copy-sizes: bytes per copy, five ways
  std::string trace_path;
};

// --copy-sizes: every way of small_copies.h at every size, against the bus's rate for one copy of
// all the bytes (the bound part 2's pipelines are measured against).
constexpr std::size_t kCopyPassBytes = 64'000'000;  // each pass: 1,000 copies of 64K down to 64 of 1M

void copy_size_sweep(const std::vector<std::int64_t>& sizes, Report& report) {
  Stream stream;
  const double bound = pinned_h2d_gbps(kCopyPassBytes, stream.get());
  std::vector<std::size_t> bytes(sizes.begin(), sizes.end());
  const std::vector<CopyRate> rates = measure_small_copies(bytes, kCopyPassBytes, stream.get());
  Table table({{"size", "bytes per copy"}, {"way", "way"}, {"gbps", "GB/s", 1},
               {"bound_percent", "% of bound", 1}, {"check", "check"}});
  for (const CopyRate& r : rates) {
    report.check(r.correct, std::string(copy_way_name(r.way)) + " at " + std::to_string(r.size) + " bytes: not every byte arrived");
    table.add_row().set("size", static_cast<std::int64_t>(r.size)).set("way", copy_way_name(r.way)).set("gbps", r.gbps)
        .set("bound_percent", 100.0 * r.gbps / bound).set("check", r.correct ? "ok" : "FAILED");
  }
  report.out() << format("pinned host to device, %zu bytes in pieces of each size, one stream; the bound: one copy "
                         "of it all, %.1f GB/s (median of 10); each way the median of 5 passes, every byte checked:\n",
                         kCopyPassBytes, bound);
  table.print(report.out());
  report.json()["pcie_bound_gbps"] = bound;
  report.json()["copy_pass_bytes"] = kCopyPassBytes;
  report.json()["small_copies"] = table.json();
}

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 04's harness: the time of each training step per epoch, against the copy ceiling"};
  add_run_options(app, o.run);
  app.remove_option(app.get_option("--print-every"));  // the lesson's: the bench prints no losses
  std::string batch_sizes, sync_every;
  app.add_option("--batch-sizes", batch_sizes, "part 2: sweep the mini-batch pipelines over these batch sizes (e.g. 4K,64K,1M)")
      ->type_name("LIST");
  app.add_option("--sync-every", sync_every, "time the loop with the loss read every k epochs, for each k (e.g. 1,10,200)")
      ->type_name("LIST");
  std::string copy_sizes;
  app.add_option("--copy-sizes", copy_sizes,
                 "the bus's share a host-to-device copy of each size gets, five ways (bytes, e.g. 64K,256K,1M; each a "
                 "multiple of 16 dividing 64M)")
      ->type_name("LIST");
  app.add_option("--trace", o.trace_path,
                 "part 2, with one batch size: write a Chrome trace (Perfetto, chrome://tracing) of 8 steps of each pipeline")
      ->type_name("FILE");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  check_run_options(app, o.run, "--batch-sizes");
  const Config& config = o.run.config;
  const bool cpu = o.run.device.cpu;
  if (app.count("--sync-every")) o.sync_every = parse_size_list("--sync-every", sync_every, 1, config.epochs);
  const bool sweep = app.count("--batch-sizes") > 0;
  if (!o.sync_every.empty() && (sweep || cpu)) {
    throw UsageError("--sync-every times the GPU loop alone: not with --batch-sizes or --device cpu");
  }
  if (sweep) o.batch_sizes = parse_size_list("--batch-sizes", batch_sizes, 1, split_of(config.points).train);
  if (sweep && cpu) throw UsageError("--batch-sizes sweeps the GPU pipelines: not with --device cpu");
  if (app.count("--copy-sizes")) {
    if (sweep || !o.sync_every.empty() || cpu) {
      throw UsageError("--copy-sizes times copies alone: not with --batch-sizes, --sync-every or --device cpu");
    }
    o.copy_sizes = parse_size_list("--copy-sizes", copy_sizes, 16, kCopyPassBytes);
    for (const std::int64_t size : o.copy_sizes) {
      if (size % 16 != 0 || kCopyPassBytes % size != 0) {
        throw UsageError("--copy-sizes: " + std::to_string(size) + " is not a multiple of 16 dividing 64M (64000000)");
      }
    }
  }
  for (const std::int64_t size : o.batch_sizes) {
    validate(BatchPlan{size, o.run.shuffle, config.seed}, split_of(config.points).train, config.epochs, "--batch-sizes");
  }
  if (app.count("--trace")) {
    require_output_file("--trace", o.trace_path, ".json");
    require_distinct_outputs("--trace", o.trace_path, "--json", o.run.common.json.value_or(""));
    if (o.batch_sizes.size() != 1) {
      throw UsageError(o.batch_sizes.empty() ? "--trace draws part 2's pipelines: it needs --batch-sizes with one size"
                                             : "--trace draws one batch size, --batch-sizes gives " +
                                                   std::to_string(o.batch_sizes.size()));
    }
  }
  return std::nullopt;
}

// What the lesson does before its first epoch (issue #30), timed as 02 times tensors: the host
// clock from the call until the result is in GPU memory, after 2 warm-up runs. The model's two
// parameters copied from pageable host memory (model.to('cuda')) or written on the GPU
// (nn.Linear(1, 1, device='cuda')); the data made on the GPU, without noise and with cuRAND's.
void setup_costs(const Config& config, bool quick, cudaStream_t stream, Report& report) {
  const int timed = quick ? 3 : 10;
  auto time = [&](const std::function<void()>& make) {
    std::vector<double> ms;
    for (int i = 0; i < 2 + timed; ++i) {
      const auto start = std::chrono::steady_clock::now();
      make();
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto stop = std::chrono::steady_clock::now();
      if (i >= 2) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    return timing(summarize(ms));
  };
  DeviceBuffer<float> params(2), x(config.points), y(config.points);
  const float initial[2] = {kInitialW, kInitialB};
  Config plain = config, noisy = config;
  plain.noise = 0.0;
  noisy.noise = config.noise > 0 ? config.noise : 0.1;  // the run's noise, else a little
  Table table({{"what", "setup step"}, {"pytorch", "as PyTorch writes it"},
               {"time_ms", "ms", 4, Column::Style::kTiming}});
  auto add = [&](const std::string& what, const char* pytorch, const std::function<void()>& make) {
    table.add_row().set("what", what).set("pytorch", pytorch).set("time_ms", time(make));
  };
  add("parameters copied to the GPU", "nn.Linear(1, 1).to('cuda')", [&] {
    CUDA_CHECK(cudaMemcpyAsync(params.data(), initial, sizeof initial, cudaMemcpyHostToDevice, stream));
  });
  add("parameters made on the GPU", "nn.Linear(1, 1, device='cuda')",
      [&] { launch_set_params(params.data(), kInitialW, kInitialB, stream); });
  for (const Config* c : {&plain, &noisy}) {
    add(format("data made on the GPU, noise %g", c->noise), "make_data(..., device='cuda')", [&] {
      const DeviceBuffer<float> noise = make_noise_on_gpu(*c, stream);  // empty without noise
      launch_make_data(x.data(), y.data(), noise.data(), c->noise, 0, c->points, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));  // before the noise is freed
    });
  }
  report.out() << format("setup before the first epoch (host clock until the result is on the GPU, %s after 2 "
                         "warm-up):\n", workbook::median_of(timed, "run", "runs").c_str());
  table.print(report.out());
  report.json()["setup"] = table.json();
}

std::string gpu_name(int index) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return prop.name;
}

// The per-step table: each step's time per epoch (median, min, max over the epochs), its share of
// the total (of the means: they add up to the total's, as medians need not), and the bandwidth of
// the three data steps.
void print_steps(const StepTimes& t, const Config& config, bool cpu, Report& report) {
  const std::int64_t n = split_of(config.points).train;
  Table table({{"step", "step"}, {"time_ms", "ms/epoch", 4, Column::Style::kTiming}, {"share", "share %", 1},
               {"gbps", "GB/s", 0}});
  const Stats total = summarize(t.total_ms());
  for (int k = 0; k < 4; ++k) {
    const Stats step = summarize(t.ms[k]);
    Table::Row& row = table.add_row().set("step", kSteps[k]).set("time_ms", timing(step));
    row.set("share", 100.0 * step.mean / total.mean);
    if (kArraysMoved[k] > 0) row.set("gbps", gigabytes_per_second(kArraysMoved[k] * 4.0 * n, step.median));
  }
  table.add_row().set("step", "total").set("time_ms", timing(total));
  report.out() << format("per-epoch time of each step (over %d epochs, %s):\n", config.epochs,
                         cpu ? "host clock" : "CUDA events between the launches");
  table.print(report.out());
  report.json()["steps"] = table.json();
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  const Config& config = o.run.config;
  const bool cpu = o.run.device.cpu;
  if (!cpu) {
    use_device(o.run.device.index);
    require_gpu_memory(config.points, config.epochs);
  }
  Report report("linear_regression_bench", o.run.common.json);
  const Split split = split_of(config.points);
  nlohmann::json& j = report.json();
  j["device"] = cpu ? "CPU" : gpu_name(o.run.device.index);
  j["torch_device"] = o.run.device.name();
  j["quick"] = o.run.common.quick;
  j.update(settings_json(config));
  if (!o.batch_sizes.empty()) {
    j["shuffle"] = o.run.shuffle;
    j["fill_threads"] = o.run.fill_threads;
    batch_size_sweep(config, o.batch_sizes, o.run.shuffle, o.run.fill_threads, o.trace_path, report);
    return report.finish();
  }
  if (!o.sync_every.empty()) {
    sync_cost(config, o.sync_every, report);
    return report.finish();
  }
  if (!o.copy_sizes.empty()) {
    copy_size_sweep(o.copy_sizes, report);
    return report.finish();
  }
  std::ostream& out = report.out();
  out << format("linear_regression_bench: %lld points (%lld train), %d epochs, on %s\n",
                static_cast<long long>(config.points), static_cast<long long>(split.train), config.epochs,
                cpu ? "cpu (one core)" : describe_device(o.run.device.index).c_str());

  std::optional<Stream> stream;  // none on the CPU: it must run without a driver
  StepTimes t;
  TrainingResult want;
  if (cpu) {
    const Dataset data = make_dataset_cpu(config);
    want = train_reference(data, config);
    t = cpu_step_times(data, config);
  } else {
    stream.emplace();
    t = gpu_step_times(config, stream->get());
    GpuRegression gpu(config, stream->get());  // the same data, made again, for the reference
    want = train_reference(gpu.copy_dataset(), config);
  }
  if (want.diverged_at) {
    report.check(false, "diverged at epoch " + std::to_string(*want.diverged_at) + "; nothing to time (try a smaller --lr)");
    return report.finish();
  }
  const Check c = check_against(t.result, want);
  report.check(c.ok, c.failure);
  out << format("checked against the float64 reference: w err %g, b err %g, worst loss err %g (%s)\n", c.w, c.b,
                c.losses, c.ok ? "ok" : "FAILED");
  if (!report.passed()) return report.finish();

  print_steps(t, config, cpu, report);
  if (!cpu) {
    const double ceiling = device_copy_gbps(split.train * sizeof(float), stream->get());
    out << format("ceiling: device-to-device copy of the training X: %g GB/s (bytes read + written)\n", ceiling);
    report.json()["copy_gbps"] = ceiling;
    setup_costs(config, o.run.common.quick, stream->get(), report);
  }
  return report.finish();
}

}  // namespace
}  // namespace workbook::linear_regression

int main(int argc, char** argv) {
  return workbook::guarded_main("linear_regression_bench", [&] { return workbook::linear_regression::run(argc, argv); });
}

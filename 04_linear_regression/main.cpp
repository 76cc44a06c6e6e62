// main.cpp: chapter 04's program. Trains y = w*X + b exactly as the article's PyTorch loop does
// (forward, MSE loss, backward, SGD step), on the GPU one kernel per step or on the CPU, checks
// the result against the float64 reference of the same recurrence, then times it.
//
//   linear_regression                         # 5M points, 200 epochs, on cuda:0
//   linear_regression --device cpu --json cpu.json
//   linear_regression --lr 1.0                # diverged at epoch k, exit 1
#include "cli.h"
#include "event_timer.h"
#include "gpu_probe.h"
#include "linear_regression.cuh"
#include "nvtx.h"
#include "program.h"
#include "regression.h"
#include "report.h"
#include "stats.h"
#include "stream.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace workbook;
using namespace workbook::regression;

nlohmann::json stats_json(const Stats& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"repeats", s.count}};
}

int run(int argc, char** argv) {
  CLI::App app{"Chapter 04: the article's PyTorch linear-regression loop, one CUDA kernel per step"};
  CommonOptions common;
  add_common_options(app, common, DeviceFlag::kNone);
  Config config;
  DeviceChoice device;
  app.add_option_function<std::string>(
         "--device", [&device](const std::string& text) { device = parse_device(text, CpuDevice::kAllowed); },
         "cpu, N, cuda or cuda:N (as torch.device; default cuda:0)")
      ->type_name("DEVICE");
  add_size_option(app, "--points", config.points,
                  "number of points N, e.g. 5000000 or 5M (X = i * 2e-6, first 80% train)");
  app.add_option("--epochs", config.epochs, "full-batch gradient-descent epochs")->type_name("E");
  app.add_option("--lr", config.lr, "SGD learning rate")->type_name("LR");
  app.add_option("--noise", config.noise, "standard deviation of Gaussian noise on y (cuRAND)")->type_name("SIGMA");
  add_seed_option(app, config.seed, "cuRAND seed of the noise");
  app.add_option("--print-every", config.print_every, "print the loss every this many epochs")->type_name("K");
  if (auto code = parse_command_line(app, argc, argv)) return *code;
  if (common.quick && app.count("--points") == 0) config.points = 20'011;  // odd, not a block multiple
  if (common.quick && app.count("--epochs") == 0) config.epochs = 60;
  validate(config);
  const Repeats repeats = device.cpu ? Repeats{1, common.quick ? 2 : 3} : Repeats{2, common.quick ? 2 : 10};

  // 1. The device first, so that "no GPU" (77), a bad index (2) or too little memory (1) is the
  //    program's only line. Then the data: on the GPU for cuda (the reference reads it back), on
  //    the host for cpu.
  std::string device_name = "CPU (one core)";
  if (!device.cpu) {
    use_device(device.index);
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device.index));
    device_name = prop.name;
    require_gpu_memory(config.points, config.epochs);  // before any allocation
  }
  Report report("linear_regression", common.json);
  std::ostream& out = report.out();
  const Split split = split_of(config.points);
  out << "linear_regression: y = w*X + b by full-batch SGD, " << config.points << " points (" << split.train
      << " train, " << split.test << " test), " << config.epochs << " epochs, lr " << config.lr << ", noise "
      << config.noise << " (seed " << config.seed << ")\n";

  std::optional<Stream> stream;
  std::optional<GpuRegression> gpu;
  Dataset data;
  if (device.cpu) {
    NvtxRange range("make data");
    data = make_dataset_cpu(config);
  } else {
    stream.emplace();
    gpu.emplace(config, stream->get());
    data = gpu->copy_dataset();
  }
  out << "device: " << device.name() << " (" << device_name << "); data made on the "
      << (device.cpu ? "host" : "GPU") << ": X = i * 2e-6, y = 0.7 X + 0.3"
      << (config.noise > 0 ? " + noise" : "") << "\n";

  // 2. Reference: the same recurrence in double on the same float32 data.
  TrainingResult want;
  {
    NvtxRange range("reference");
    want = train_reference(data, config);
  }
  if (!want.diverged_at) {
    out << std::setprecision(9) << "reference (float64 recurrence on the same float32 data): w " << want.w << ", b "
        << want.b << "\n";
  }

  // 3. The run whose results are reported: losses printed as training goes, as in PyTorch.
  out << "training on " << device.name() << (device.cpu ? " (float32, one function per step)\n"
                                                         : " (float32; forward, loss, backward, step kernels)\n");
  auto print_loss = [&out](int epoch, double loss) {
    out << "  epoch " << std::setw(4) << epoch << "  loss " << std::setprecision(7) << loss << "\n";
  };
  StepTimes s;
  TrainingResult got = device.cpu ? train_cpu(data, config, print_loss, &s) : gpu->train(print_loss, &s);

  nlohmann::json& j = report.json();
  j["implementation"] = device.cpu ? "cpu" : "cuda";
  j["device"] = device.name();
  j["device_name"] = device_name;
  j["points"] = config.points;
  j["train_points"] = split.train;
  j["test_points"] = split.test;
  j["epochs"] = config.epochs;
  j["lr"] = config.lr;
  j["noise"] = config.noise;
  j["seed"] = config.seed;
  j["print_every"] = config.print_every;
  j["diverged_at"] = got.diverged_at ? nlohmann::json(*got.diverged_at) : nlohmann::json();

  if (got.diverged_at) {
    const int k = *got.diverged_at;
    out << "diverged at epoch " << k << ": the loss " << (std::isfinite(got.losses.at(k)) ? "grew past 1e10 times its first value"
                                                                                              : "is no longer finite")
        << "; no results to report (try a smaller --lr)\n";
    report.check(false, "diverged at epoch " + std::to_string(k));
    return report.finish();
  }
  if (want.diverged_at) {
    report.check(false, "the float64 reference diverged at epoch " + std::to_string(*want.diverged_at) +
                            " but the float32 run did not");
    return report.finish();
  }

  out << std::setprecision(9) << "final: w " << got.w << ", b " << got.b << ", test MSE " << got.test_mse << "\n";
  const std::vector<int> epochs = printed_epochs(config.epochs, config.print_every);
  nlohmann::json losses = nlohmann::json::array();
  for (int e : epochs) losses.push_back({{"epoch", e}, {"loss", got.losses[e]}});
  j["losses"] = losses;
  j["w"] = got.w;
  j["b"] = got.b;
  j["test_mse"] = got.test_mse;
  j["reference"] = {{"w", want.w}, {"b", want.b}, {"test_mse", want.test_mse}};

  // 4. Check against the reference: w, b and the test MSE, and the loss of every epoch.
  const Check c = check_against(got, want);
  j["relative_error"] = {{"w", c.w}, {"b", c.b}, {"losses", c.losses}, {"test_mse", c.test_mse}};
  out << std::setprecision(2) << "check against the reference: relative error w " << c.w << ", b " << c.b
      << " (tolerance " << kParameterTolerance.rel << "); losses " << c.losses << " (worst epoch), test MSE "
      << c.test_mse << " (tolerance " << kLossTolerance.rel << ")\n";
  report.check(c.ok, c.failure);
  if (!report.passed()) return report.finish();

  // 5. Time: the whole epoch loop (loss reads included, as in the PyTorch loop), warmed up, repeated.
  std::vector<double> ms;
  {
    NvtxRange range("timed runs");
    for (int i = 0; i < repeats.warmup + repeats.timed; ++i) {
      const TrainingResult t = device.cpu ? train_cpu(data, config) : gpu->train();
      if (i >= repeats.warmup) ms.push_back(t.training_ms);
      if (!device.cpu) report.check(t.w == got.w && t.b == got.b, "a repeated GPU run gave different bits for w, b");
    }
  }
  const Stats time = summarize(ms);
  out << std::setprecision(4) << "training time, " << config.epochs << " epochs: " << time.median << " ms median (min "
      << time.min << ", max " << time.max << ") over " << time.count << " runs after " << repeats.warmup
      << " warm-up" << (device.cpu ? ", host clock\n" : ", CUDA events\n");
  j["training_ms"] = stats_json(time);
  if (!device.cpu) out << "repeated runs: w and b bit-identical in every run\n";

  const double train_mb = split.train * 4.0 / 1e6;  // one float array of the training set, in MB
  // Bytes each step must move: forward reads x, writes pred; loss reads pred, y; backward reads pred, y, x.
  const double bytes_mb[4] = {2 * train_mb, 2 * train_mb, 3 * train_mb, 0.0};
  const double step_ms[4] = {s.forward, s.loss, s.backward, s.step};
  const char* names[4] = {"forward", "loss", "backward", "step"};
  out << "per-epoch time of each step (median over the epochs of the first run, "
      << (device.cpu ? "host clock" : "CUDA events") << "):\n"
      << "  step        ms/epoch   share   GB/s\n";
  nlohmann::json steps = nlohmann::json::object();
  for (int k = 0; k < 4; ++k) {
    out << "  " << std::left << std::setw(10) << names[k] << std::right << std::fixed << std::setprecision(4)
        << std::setw(10) << step_ms[k] << std::setw(7) << std::setprecision(1) << 100.0 * step_ms[k] / s.total()
        << "%";
    if (bytes_mb[k] > 0) out << std::setw(7) << std::setprecision(0) << bytes_mb[k] / step_ms[k];
    out << "\n";
    steps[names[k]] = step_ms[k];
  }
  out << "  " << std::left << std::setw(10) << "total" << std::right << std::setw(10) << std::setprecision(4)
      << s.total() << "\n"
      << std::defaultfloat;
  steps["total"] = s.total();
  j["per_epoch_ms"] = steps;
  if (!device.cpu) {
    const double ceiling = gpu->copy_gbps();
    out << std::setprecision(4) << "ceiling: device-to-device copy of the training X: " << ceiling
        << " GB/s (bytes read + written)\n";
    j["copy_gbps"] = ceiling;
  }
  return report.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("linear_regression", [&] { return run(argc, argv); });
}

// bench_regression.cpp: chapter 04's measuring harness, beside the lesson (linear_regression.cu),
// whose launchers and CPU twins it links. It answers the article's per-operation chart: how long
// each step of one epoch takes (forward, loss, backward, SGD step), and what bandwidth the three
// data steps reach against a device-to-device copy of the same GPU.
//
//   linear_regression_bench                          # the GPU's steps at 5M points, 200 epochs
//   linear_regression_bench --device cpu --json cpu_steps.json
//
// A pair of CUDA events around each launcher call (the host clock around each twin on the CPU);
// the median of each step over the epochs. The run is checked against the float64 reference
// before its times are shown.
#include "cli.h"
#include "compute_capability.h"
#include "copy_ceiling.h"
#include "cuda_check.h"
#include "gpu_probe.h"
#include "linear_regression.cuh"
#include "nvtx.h"
#include "program.h"
#include "regression_cli.h"
#include "regression_data.h"
#include "report.h"
#include "stats.h"
#include "stream.h"
#include "table.h"

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace workbook;
using namespace workbook::regression;

constexpr std::array<const char*, 4> kSteps = {"forward", "loss", "backward", "step"};
// Float arrays of the training set each step reads or writes: forward reads x and writes pred;
// the loss reads pred and y; the backward pass reads pred, y and x; the step touches 4 floats.
constexpr std::array<int, 4> kArraysMoved = {2, 2, 3, 0};

struct StepTimes {
  std::array<std::vector<double>, 4> ms;  // ms[k][epoch]
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

int run(int argc, char** argv) {
  CLI::App app{"Chapter 04's harness: the time of each training step per epoch, against the copy ceiling"};
  CommonOptions common;
  add_common_options(app, common, DeviceFlag::kNone);
  DeviceChoice device;
  app.add_option_function<std::string>(
         "--device", [&device](const std::string& text) { device = parse_device(text, CpuDevice::kAllowed); },
         "cpu, N, cuda or cuda:N (default cuda:0)")
      ->type_name("DEVICE");
  Config config;
  add_problem_options(app, config);
  if (auto code = parse_command_line(app, argc, argv)) return *code;
  if (common.quick && app.count("--points") == 0) config.points = 20'011;
  if (common.quick && app.count("--epochs") == 0) config.epochs = 60;
  validate(config);
  if (!device.cpu) {
    use_device(device.index);
    require_gpu_memory(config.points, config.epochs);
  }

  Report report("linear_regression_bench", common.json);
  std::ostream& out = report.out();
  const Split split = split_of(config.points);
  out << "linear_regression_bench: " << config.points << " points (" << split.train << " train), " << config.epochs
      << " epochs, on " << (device.cpu ? "cpu (one core)" : describe_device(device.index)) << "\n";

  std::optional<Stream> stream;  // none on the CPU: it must run without a driver
  StepTimes t;
  TrainingResult want;
  if (device.cpu) {
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
  out << "checked against the float64 reference: w err " << c.w << ", b err " << c.b << ", worst loss err " << c.losses
      << (c.ok ? " (ok)\n" : " (FAILED)\n");
  if (!report.passed()) return report.finish();

  Table table({{"step", "step"}, {"ms", "ms/epoch", 4}, {"share", "share %", 1}, {"gbps", "GB/s", 0}});
  double total = 0.0;
  std::array<double, 4> step_ms{};
  for (int k = 0; k < 4; ++k) total += step_ms[k] = median(t.ms[k]);
  for (int k = 0; k < 4; ++k) {
    Table::Row& row = table.add_row().set("step", kSteps[k]).set("ms", step_ms[k]).set("share", 100.0 * step_ms[k] / total);
    if (kArraysMoved[k] > 0) row.set("gbps", gigabytes_per_second(kArraysMoved[k] * 4.0 * split.train, step_ms[k]));
  }
  table.add_row().set("step", "total").set("ms", total);
  out << "per-epoch time of each step (median over " << config.epochs << " epochs, "
      << (device.cpu ? "host clock" : "CUDA events between the launches") << "):\n";
  table.print(out);
  report.json()["steps"] = table.json();
  if (!device.cpu) {
    const double ceiling = device_copy_gbps(split.train * sizeof(float), stream->get());
    out << "ceiling: device-to-device copy of the training X: " << ceiling << " GB/s (bytes read + written)\n";
    report.json()["copy_gbps"] = ceiling;
  }
  return report.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("linear_regression_bench", [&] { return run(argc, argv); });
}

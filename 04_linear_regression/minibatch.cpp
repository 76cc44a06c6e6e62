// minibatch.cpp: chapter 04's second story, mini-batch SGD with the training set in host memory.
// Read it beside "How to Use CUDA with PyTorch: Clearly Explained" (batching with a DataLoader)
// and "Understanding the Host and Device Paradigm" (pin_memory=True, non_blocking=True,
// prefetching). Here: the plan, its CPU references, and the story the lesson tells; the GPU
// side (the step kernel and the pipelines) is minibatch_pipelines.cu.
#include "minibatch.h"

#include "cli.h"
#include "format.h"
#include "linear_regression.h"  // 04's CPU twins
#include "stats.h"
#include "stream.h"
#include "table.h"

#include <chrono>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

namespace workbook::linear_regression {

// ---------------------------------------------------------------------------------------------
// The plan: which points each step trains on, and in which order.
void validate(const BatchPlan& plan, std::int64_t train_points, int epochs, const std::string& flag) {
  if (plan.batch_size < 1 || plan.batch_size > train_points) {
    throw UsageError(flag + " must be 1 to the " + std::to_string(train_points) + " training points, got " +
                     std::to_string(plan.batch_size));
  }
  const std::int64_t steps = batch_count(train_points, plan.batch_size) * epochs;
  if (steps > kMaxSteps) {  // a loss per step is kept, and each step's launch costs microseconds
    throw UsageError(flag + " " + std::to_string(plan.batch_size) + " makes " + std::to_string(steps) +
                     " steps (batches x --epochs); at most " + std::to_string(kMaxSteps));
  }
}

std::int64_t batch_count(std::int64_t train_points, std::int64_t batch_size) {
  return (train_points + batch_size - 1) / batch_size;
}

BatchSlice batch_slice(std::int64_t k, std::int64_t train_points, std::int64_t batch_size) {
  const std::int64_t first = k * batch_size;
  return {first, std::min(batch_size, train_points - first)};
}

std::vector<std::int64_t> batch_order(std::int64_t batches, const BatchPlan& plan, int epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(batches));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!plan.shuffle) return order;
  // One stream per epoch: the seed's and the epoch's bits mixed once, then Fisher-Yates from the
  // end. The modulo's bias is below 2^-40 for any batch count this program can hold.
  std::uint64_t state = plan.seed ^ (0x5851f42d4c957f2dULL * (static_cast<std::uint64_t>(epoch) + 1));
  for (std::int64_t i = batches - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

// ---------------------------------------------------------------------------------------------
// The references: the same steps with every sum in double (w and b kept in float32), and all in
// float32 with 04's CPU twins.
TrainingResult train_minibatch_reference(const Dataset& data, const Config& config, const BatchPlan& plan) {
  const std::int64_t n = data.split.train;
  const std::int64_t batches = batch_count(n, plan.batch_size);
  // w and b are stored in float32, as the run stores them: with small batches a step moves w by
  // a few ulps, and a float64 w would keep the fractions of an ulp that every float32 run drops
  // (at --quick, batch size 1, the two part by 5e-3). Each step is computed in double and applied
  // in float32, as train_reference applies it, so what is checked is the run's sums and products.
  float w = kInitialW, b = kInitialB;
  TrainingResult r;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    double epoch_loss = 0.0;
    for (const std::int64_t k : batch_order(batches, plan, epoch)) {
      const BatchSlice s = batch_slice(k, n, plan.batch_size);
      double sum_rr = 0.0, sum_rx = 0.0, sum_r = 0.0;
      for (std::int64_t i = s.first; i < s.first + s.count; ++i) {
        const double residual = double{w} * data.x[i] + double{b} - data.y[i];
        sum_rr += residual * residual;
        sum_rx += residual * data.x[i];
        sum_r += residual;
      }
      epoch_loss += sum_rr / s.count;
      w -= static_cast<float>(config.lr * 2.0 * sum_rx / s.count);
      b -= static_cast<float>(config.lr * 2.0 * sum_r / s.count);
    }
    r.losses.push_back(epoch_loss / batches);
    if (is_divergent(r.losses.back(), r.losses.front())) {
      r.diverged_at = epoch;
      return r;
    }
  }
  finish_reference(r, data, w, b);
  return r;
}

Check check_minibatch(const TrainingResult& got, const TrainingResult& want) {
  return check_against(got, want, kParameterTolerance, kMiniBatchLossTolerance);
}

TrainingResult train_minibatch_cpu(const Dataset& data, const Config& config, const BatchPlan& plan) {
  const std::int64_t n = data.split.train;
  const std::int64_t batches = batch_count(n, plan.batch_size);
  const float lr = static_cast<float>(config.lr);
  std::vector<float> pred(static_cast<std::size_t>(plan.batch_size));
  float w = kInitialW, b = kInitialB;
  TrainingResult r;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    double epoch_loss = 0.0;
    for (const std::int64_t k : batch_order(batches, plan, epoch)) {
      const BatchSlice s = batch_slice(k, n, plan.batch_size);
      const float* x = data.x.data() + s.first;
      const float* y = data.y.data() + s.first;
      forward_cpu(x, w, b, pred.data(), s.count);
      epoch_loss += mse_loss_cpu(pred.data(), y, s.count);
      float grad_w = 0.0f, grad_b = 0.0f;
      mse_backward_cpu(pred.data(), y, x, s.count, &grad_w, &grad_b);
      sgd_step_cpu(&w, grad_w, lr);
      sgd_step_cpu(&b, grad_b, lr);
    }
    r.losses.push_back(epoch_loss / batches);
    if (is_divergent(r.losses.back(), r.losses.front())) {
      r.diverged_at = epoch;
      return r;
    }
  }
  r.training_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.test_mse = test_mse_cpu(data, w, b);
  r.w = w;
  r.b = b;
  return r;
}

// ---------------------------------------------------------------------------------------------
// The story the lesson program tells: check every pipeline, then time it, then one table.
void minibatch_story(Report& report, const Dataset& data, const Config& config, const BatchPlan& plan, bool cpu,
                     int fill_threads, bool quick) {
  std::ostream& out = report.out();
  const std::int64_t n = data.split.train;
  const std::int64_t batches = batch_count(n, plan.batch_size);
  out << format("mini-batch SGD: %lld batches of up to %lld points an epoch, %s; the training set (%g MB of x and y) "
                "in host memory\n", static_cast<long long>(batches), static_cast<long long>(plan.batch_size),
                plan.shuffle ? ("in a new order every epoch (seed " + std::to_string(plan.seed) + ")").c_str() : "in order",
                8.0 * n / 1e6);
  const TrainingResult want = train_minibatch_reference(data, config, plan);
  if (want.diverged_at) {
    report.check(false, "diverged at epoch " + std::to_string(*want.diverged_at) + " (the float64 reference)");
    return;
  }
  const int timed = quick ? 1 : 3;
  Table table({{"pipeline", "pipeline"}, {"epoch_ms", "ms/epoch", 4, Column::Style::kTiming}, {"copy_share", "copy busy %", 1},
               {"bound_percent", "% of PCIe bound", 1}, {"w", ""}, {"b", ""}, {"w_error", "w err", 1, Column::Style::kScientific},
               {"b_error", "b err", 1, Column::Style::kScientific}, {"check", "check"}});
  if (cpu) {
    const TrainingResult got = train_minibatch_cpu(data, config, plan);
    const Check c = check_minibatch(got, want);
    report.check(c.ok, "cpu: " + c.failure);
    Table::Row& row = table.add_row().set("pipeline", "cpu (04's twins)").set("w", got.w).set("b", got.b);
    row.set("w_error", c.w).set("b_error", c.b).set("check", c.ok ? "ok" : "FAILED");
    if (c.ok) {
      std::vector<double> ms;
      for (int i = 0; i < timed; ++i) ms.push_back(train_minibatch_cpu(data, config, plan).training_ms / config.epochs);
      row.set("epoch_ms", timing(summarize(ms)));
    }
  } else {
    Stream compute, copy;
    const double bound_gbps = pinned_h2d_gbps(n * sizeof(float), copy.get());
    const double bound_ms = 8.0 * n / (bound_gbps * 1e6);  // one epoch's x and y at that rate
    out << format("PCIe bound: the best pinned host-to-device copy here, %g GB/s: %g ms an epoch\n", bound_gbps, bound_ms);
    report.json()["pcie_bound_gbps"] = bound_gbps;
    std::optional<TrainingResult> first_bits;
    for (int k = 1; k <= kPipelineCount; ++k) {
      const Pipeline p = static_cast<Pipeline>(k);
      const MinibatchRun first = train_minibatch_gpu(data, config, plan, p, fill_threads, compute.get(), copy.get());
      const Check c = check_minibatch(first.result, want);
      report.check(c.ok, std::string(pipeline_name(p)) + ": " + c.failure);
      // The same kernel in the same batch order: every pipeline must give the same bits.
      if (!first_bits) first_bits = first.result;
      report.check(first.result.w == first_bits->w && first.result.b == first_bits->b,
                   std::string(pipeline_name(p)) + ": other bits of w, b than the first pipeline");
      Table::Row& row = table.add_row().set("pipeline", std::to_string(k) + " " + pipeline_name(p));
      row.set("w", first.result.w).set("b", first.result.b).set("w_error", c.w).set("b_error", c.b);
      row.set("check", c.ok ? "ok" : "FAILED");
      if (!c.ok) continue;
      std::vector<double> ms;
      MinibatchRun last;
      for (int i = 0; i < timed; ++i) {
        last = train_minibatch_gpu(data, config, plan, p, fill_threads, compute.get(), copy.get());
        ms.push_back(last.ms / config.epochs);
      }
      row.set("epoch_ms", timing(summarize(ms))).set("copy_share", 100.0 * last.copy_busy_ms / last.last_epoch_ms);
      row.set("bound_percent", 100.0 * bound_ms / median(ms));
    }
  }
  out << format("checked against the reference of the same batch order (float64 sums, float32 w and b; 04's"
                " tolerances); time per epoch,"
                " %s (host clock)%s", median_of(timed, "run", "runs").c_str(),
                cpu ? ":\n" : "; copy busy: the share of the last epoch its copies took (CUDA events):\n");
  table.print(out);
  report.json()["minibatch"] = table.json();
}

}  // namespace workbook::linear_regression

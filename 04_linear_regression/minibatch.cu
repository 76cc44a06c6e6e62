// minibatch.cu: chapter 04's second story, mini-batch SGD with the training set in host memory.
// Read it beside "How to Use CUDA with PyTorch: Clearly Explained" (batching with a DataLoader)
// and "Understanding the Host and Device Paradigm" (pin_memory=True, non_blocking=True,
// prefetching). First the plan and its CPU references; the GPU pipelines follow them.
#include "minibatch.h"

#include "cli.h"
#include "linear_regression.cuh"

#include <numeric>
#include <string>
#include <utility>

namespace workbook::regression {

// ---------------------------------------------------------------------------------------------
// 1. The plan: which points each step trains on, and in which order.
void validate(const BatchPlan& plan, std::int64_t train_points) {
  if (plan.batch_size < 1 || plan.batch_size > train_points) {
    throw UsageError("--batch-size must be 1 to the " + std::to_string(train_points) +
                     " training points, got " + std::to_string(plan.batch_size));
  }
}

std::int64_t batch_count(std::int64_t train_points, std::int64_t batch_size) {
  return (train_points + batch_size - 1) / batch_size;
}

BatchSlice batch_slice(std::int64_t k, std::int64_t train_points, std::int64_t batch_size) {
  const std::int64_t first = k * batch_size;
  return {first, std::min(batch_size, train_points - first)};
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
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
// 2. The references: the same steps in double, and in float32 with 04's CPU twins.
TrainingResult train_minibatch_reference(const Dataset& data, const Config& config, const BatchPlan& plan) {
  const std::int64_t n = data.split.train;
  const std::int64_t batches = batch_count(n, plan.batch_size);
  double w = kInitialW, b = kInitialB;
  TrainingResult r;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    double epoch_loss = 0.0;
    for (const std::int64_t k : batch_order(batches, plan, epoch)) {
      const BatchSlice s = batch_slice(k, n, plan.batch_size);
      double sum_rr = 0.0, sum_rx = 0.0, sum_r = 0.0;
      for (std::int64_t i = s.first; i < s.first + s.count; ++i) {
        const double residual = w * data.x[i] + b - data.y[i];
        sum_rr += residual * residual;
        sum_rx += residual * data.x[i];
        sum_r += residual;
      }
      epoch_loss += sum_rr / s.count;
      w -= config.lr * 2.0 * sum_rx / s.count;
      b -= config.lr * 2.0 * sum_r / s.count;
    }
    r.losses.push_back(epoch_loss / batches);
    if (is_divergent(r.losses.back(), r.losses.front())) {
      r.diverged_at = epoch;
      return r;
    }
  }
  double sum_test = 0.0;
  for (std::int64_t i = n; i < n + data.split.test; ++i) {
    const double residual = w * data.x[i] + b - data.y[i];
    sum_test += residual * residual;
  }
  r.w = w;
  r.b = b;
  r.test_mse = sum_test / data.split.test;
  return r;
}

TrainingResult train_minibatch_cpu(const Dataset& data, const Config& config, const BatchPlan& plan) {
  const std::int64_t n = data.split.train;
  const std::int64_t batches = batch_count(n, plan.batch_size);
  const float lr = static_cast<float>(config.lr);
  std::vector<float> pred(data.x.size());
  float w = kInitialW, b = kInitialB;
  TrainingResult r;
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
  forward_cpu(data.x.data() + n, w, b, pred.data() + n, data.split.test);
  r.test_mse = mse_loss_cpu(pred.data() + n, data.y.data() + n, data.split.test);
  r.w = w;
  r.b = b;
  return r;
}

}  // namespace workbook::regression

// regression.cpp: the float32 CPU version of the article's training loop, one function per step.
#include "regression.h"

#include "stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace workbook::regression {

namespace {

// Float32 sum as the CPU version computes it: 8 lanes (vectorizable) over blocks of 4096 terms,
// then the block totals in order. Deterministic, and its error stays far below the tolerances.
template <class Term>
float float_sum(std::int64_t n, Term term) {
  constexpr std::int64_t kBlock = 4096;
  float total = 0.0f;
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t end = std::min(n, start + kBlock);
    float lane[8] = {};
    std::int64_t i = start;
    for (; i + 8 <= end; i += 8) {
      for (int j = 0; j < 8; ++j) lane[j] += term(i + j);
    }
    for (; i < end; ++i) lane[0] += term(i);
    total += ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  return total;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void forward_cpu(const float* x, float w, float b, float* pred, std::int64_t n) {
  // A product and a sum (x86-64 without -mfma has no fused multiply-add; a libm fmaf call per
  // element would cost more than the whole epoch). The kernel fuses them: 1 ulp apart at most.
  for (std::int64_t i = 0; i < n; ++i) pred[i] = w * x[i] + b;
}

float mse_loss_cpu(const float* pred, const float* y, std::int64_t n) {
  const float sum = float_sum(n, [&](std::int64_t i) {
    const float r = pred[i] - y[i];
    return r * r;
  });
  return sum / static_cast<float>(n);
}

void mse_backward_cpu(const float* pred, const float* y, const float* x, std::int64_t n, float* grad_w,
                      float* grad_b) {
  const float scale = 2.0f / static_cast<float>(n);  // d/dpred of mean((pred - y)^2)
  *grad_w = scale * float_sum(n, [&](std::int64_t i) { return (pred[i] - y[i]) * x[i]; });
  *grad_b = scale * float_sum(n, [&](std::int64_t i) { return pred[i] - y[i]; });
}

void sgd_step_cpu(float* param, float grad, float lr) { *param -= lr * grad; }

TrainingResult train_cpu(const Dataset& data, const Config& config, const LossPrinter& print, StepTimes* steps) {
  const std::int64_t n = data.split.train;
  const float lr = static_cast<float>(config.lr);
  std::vector<float> pred(data.x.size());
  float w = kInitialW, b = kInitialB;
  TrainingResult r;
  std::vector<double> t_forward, t_loss, t_backward, t_step;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    auto t = std::chrono::steady_clock::now();
    forward_cpu(data.x.data(), w, b, pred.data(), n);
    t_forward.push_back(ms_since(t));
    t = std::chrono::steady_clock::now();
    const float loss = mse_loss_cpu(pred.data(), data.y.data(), n);
    t_loss.push_back(ms_since(t));
    r.losses.push_back(loss);
    if (is_divergent(loss, r.losses.front())) {
      r.diverged_at = epoch;
      break;
    }
    if (print && epoch % config.print_every == 0) print(epoch, loss);
    t = std::chrono::steady_clock::now();
    float grad_w = 0.0f, grad_b = 0.0f;
    mse_backward_cpu(pred.data(), data.y.data(), data.x.data(), n, &grad_w, &grad_b);
    t_backward.push_back(ms_since(t));
    t = std::chrono::steady_clock::now();
    sgd_step_cpu(&w, grad_w, lr);
    sgd_step_cpu(&b, grad_b, lr);
    t_step.push_back(ms_since(t));
  }
  r.training_ms = ms_since(start);
  if (r.diverged_at) return r;
  // The test loss: forward and loss on the last 20%, outside the timed loop.
  forward_cpu(data.x.data() + n, w, b, pred.data() + n, data.split.test);
  r.test_mse = mse_loss_cpu(pred.data() + n, data.y.data() + n, data.split.test);
  r.w = w;
  r.b = b;
  if (steps != nullptr) *steps = StepTimes{median(t_forward), median(t_loss), median(t_backward), median(t_step)};
  return r;
}

}  // namespace workbook::regression

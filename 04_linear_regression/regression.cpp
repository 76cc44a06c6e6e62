// regression.cpp: data, float64 reference and float32 CPU version of the chapter's regression.
#include "regression.h"

#include "curand_generator.h"
#include "exit_codes.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace workbook::regression {

void validate(const Config& config) {
  std::ostringstream m;
  if (config.points < 2) m << "--points must be at least 2 (one to train, one to test), got " << config.points;
  else if (config.epochs < 1) m << "--epochs must be at least 1, got " << config.epochs;
  else if (!std::isfinite(config.lr) || config.lr <= 0.0)
    m << "--lr must be a finite number greater than 0, got " << config.lr;
  else if (!std::isfinite(config.noise) || config.noise < 0.0)
    m << "--noise must be a finite number of at least 0, got " << config.noise;
  else if (config.print_every < 1) m << "--print-every must be at least 1, got " << config.print_every;
  if (!m.str().empty()) throw UsageError(m.str());
}

Split split_of(std::int64_t points) {
  Split s;
  s.train = points / 5 * 4 + points % 5 * 4 / 5;  // floor(0.8 * points) without floating point
  s.test = points - s.train;
  return s;
}

float x_at(std::int64_t i) {
  const float index = static_cast<float>(i);  // exact below 2^24, as on the GPU
  return index * kXStep;
}

float y_clean(float x) {
  const float scaled = kTrueW * x;  // two roundings, never fused: the GPU uses __fmul_rn, __fadd_rn
  return scaled + kTrueB;
}

namespace {

// cuRAND's host API draws the same Philox4x32-10 stream as its device API would for this seed.
void add_noise_cpu(std::vector<float>& y, double sigma, std::uint64_t seed) {
  if (sigma == 0.0) return;
  std::vector<float> normal((y.size() + 1) / 2 * 2);  // Box-Muller yields pairs: the count must be even
  workbook::CurandGenerator generator(workbook::RngLocation::kHost, seed);
  generator.normal(normal.data(), normal.size(), 0.0f, 1.0f);
  const float s = static_cast<float>(sigma);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const float scaled = s * normal[i];
    y[i] = y[i] + scaled;
  }
}

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

Dataset make_dataset_cpu(const Config& config) {
  Dataset d;
  d.split = split_of(config.points);
  d.x.resize(config.points);
  d.y.resize(config.points);
  for (std::int64_t i = 0; i < config.points; ++i) {
    d.x[i] = x_at(i);
    d.y[i] = y_clean(d.x[i]);
  }
  add_noise_cpu(d.y, config.noise, config.seed);
  return d;
}

bool is_divergent(double loss, double first_loss) {
  return !std::isfinite(loss) || loss > kDivergenceFactor * first_loss;
}

std::vector<int> printed_epochs(int epochs_run, int print_every) {
  std::vector<int> epochs;
  for (int e = 0; e < epochs_run; e += print_every) epochs.push_back(e);
  return epochs;
}

TrainingResult train_reference(const Dataset& data, const Config& config) {
  const float* x = data.x.data();
  const float* y = data.y.data();
  const std::int64_t n = data.split.train;
  double w = kInitialW, b = kInitialB;
  TrainingResult r;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    double sum_rr = 0.0, sum_rx = 0.0, sum_r = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double residual = w * x[i] + b - y[i];
      sum_rr += residual * residual;
      sum_rx += residual * x[i];
      sum_r += residual;
    }
    const double loss = sum_rr / n;
    r.losses.push_back(loss);
    if (is_divergent(loss, r.losses.front())) {
      r.diverged_at = epoch;
      return r;
    }
    w -= config.lr * 2.0 * sum_rx / n;
    b -= config.lr * 2.0 * sum_r / n;
  }
  double sum_test = 0.0;
  for (std::int64_t i = n; i < n + data.split.test; ++i) {
    const double residual = w * x[i] + b - y[i];
    sum_test += residual * residual;
  }
  r.w = w;
  r.b = b;
  r.test_mse = sum_test / data.split.test;
  return r;
}

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

TrainingResult train_cpu(const Dataset& data, const Config& config, const LossPrinter& print,
                         StepTiming timing) {
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
  if (timing == StepTiming::kOn) {
    r.step_times = StepTimes{median(t_forward), median(t_loss), median(t_backward), median(t_step)};
  }
  return r;
}

}  // namespace workbook::regression

// regression_problem.cpp: the data, the float64 reference and the check of the chapters' regression.
#include "regression_problem.h"

#include "curand_generator.h"
#include "exit_codes.h"
#include "gpu_memory.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace workbook::regression {

void validate(const Config& config) {
  std::ostringstream m;
  if (config.points < 2) m << "--points must be at least 2 (one to train, one to test), got " << config.points;
  else if (config.epochs < 1) m << "--epochs must be at least 1, got " << config.epochs;
  else if (config.epochs > kMaxEpochs) m << "--epochs must be at most " << kMaxEpochs << ", got " << config.epochs;
  else if (!std::isfinite(config.lr) || config.lr <= 0.0)
    m << "--lr must be a finite number greater than 0, got " << config.lr;
  else if (!std::isfinite(config.noise) || config.noise < 0.0)
    m << "--noise must be a finite number of at least 0, got " << config.noise;
  else if (config.print_every < 1) m << "--print-every must be at least 1, got " << config.print_every;
  if (!m.str().empty()) throw UsageError(m.str());
}

double scaled_lr(double base_lr, std::int64_t points) {
  if (points <= kArticlePoints) return base_lr;
  const double ratio = static_cast<double>(kArticlePoints) / static_cast<double>(points);
  return base_lr * ratio * ratio;
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
  // Two roundings, never fused (the build passes -ffp-contract=off): the GPU uses __fmul_rn, __fadd_rn.
  const float scaled = kTrueW * x;
  return scaled + kTrueB;
}

std::int64_t noise_count(std::int64_t points) { return (points + 1) / 2 * 2; }

void require_host_dataset(const Config& config) {
  require_host_memory("--points " + std::to_string(config.points) + " (the data set on the host)",
                      ByteCount().add(config.points, sizeof(float), 4));
}

Dataset make_dataset_cpu(const Config& config) {
  require_host_dataset(config);
  Dataset d;
  d.split = split_of(config.points);
  d.x.resize(config.points);
  d.y.resize(config.points);
  for (std::int64_t i = 0; i < config.points; ++i) {
    d.x[i] = x_at(i);
    d.y[i] = y_clean(d.x[i]);
  }
  if (config.noise > 0.0) {
    // cuRAND's host API draws the same Philox4x32-10 stream as its device API for this seed.
    std::vector<float> normal(static_cast<std::size_t>(noise_count(config.points)));
    CurandGenerator generator(RngLocation::kHost, config.seed);
    generator.normal(normal.data(), normal.size(), 0.0f, 1.0f);
    const float sigma = static_cast<float>(config.noise);
    for (std::size_t i = 0; i < d.y.size(); ++i) {
      const float scaled = sigma * normal[i];
      d.y[i] = d.y[i] + scaled;
    }
  }
  return d;
}

bool is_divergent(double loss, double first_loss) {
  return !std::isfinite(loss) || loss > kDivergenceFactor * first_loss;
}

std::optional<int> first_divergent(const std::vector<double>& losses) {
  for (std::size_t e = 0; e < losses.size(); ++e) {
    if (is_divergent(losses[e], losses.front())) return static_cast<int>(e);
  }
  return std::nullopt;
}

double residual_rounding(double largest_prediction, double largest_y) {
  return 0x1p-22 * std::max(largest_prediction, largest_y);
}

double mse_rounding(double delta, double mean_abs_residual) {
  return 2.0 * delta * mean_abs_residual + delta * delta;
}

namespace {

struct Extent {
  double x = 0.0;  // max |X|
  double y = 0.0;  // max |y|
};

Extent extent_of(const Dataset& data, std::int64_t begin, std::int64_t end) {
  Extent e;
  for (std::int64_t i = begin; i < end; ++i) {
    e.x = std::max(e.x, static_cast<double>(std::fabs(data.x[static_cast<std::size_t>(i)])));
    e.y = std::max(e.y, static_cast<double>(std::fabs(data.y[static_cast<std::size_t>(i)])));
  }
  return e;
}

}  // namespace

TrainingResult train_reference(const Dataset& data, const Config& config) {
  const float* x = data.x.data();
  const float* y = data.y.data();
  const std::int64_t n = data.split.train;
  const Extent extent = extent_of(data, 0, n);
  // w and b are stored in float32, as every run stores them: late in training a step moves w by less
  // than one float32 ulp, and a float64 w would keep the fractions of an ulp that every run drops.
  float w = kInitialW, b = kInitialB;
  TrainingResult r;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    const double wd = w, bd = b;  // every operation below in double
    double sum_rr = 0.0, sum_rx = 0.0, sum_r = 0.0, sum_abs_r = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double residual = wd * x[i] + bd - y[i];
      sum_rr += residual * residual;
      sum_rx += residual * x[i];
      sum_r += residual;
      sum_abs_r += std::fabs(residual);
    }
    const double loss = sum_rr / n;
    r.losses.push_back(loss);
    const double delta = residual_rounding(std::fabs(wd) * extent.x + std::fabs(bd), extent.y);
    r.loss_rounding.push_back(mse_rounding(delta, sum_abs_r / n));
    if (is_divergent(loss, r.losses.front())) {
      r.diverged_at = epoch;
      return r;
    }
    // The step in double, applied in float32 as a run applies it. (Rounding w - step to float
    // instead reads the same, but GCC 12.2 at -O2 and above then returns the unrounded last w and b.)
    w -= static_cast<float>(config.lr * 2.0 * sum_rx / n);
    b -= static_cast<float>(config.lr * 2.0 * sum_r / n);
  }
  finish_reference(r, data, w, b);
  return r;
}

void finish_reference(TrainingResult& r, const Dataset& data, float w, float b) {
  r.w = w;
  r.b = b;
  const TestMse test = test_mse_reference(data, w, b);
  r.test_mse = test.mse;
  r.test_mse_rounding = test.rounding;
}

TestMse test_mse_reference(const Dataset& data, double w, double b) {
  const std::int64_t begin = data.split.train, end = data.split.train + data.split.test;
  double sum_rr = 0.0, sum_abs_r = 0.0;
  for (std::int64_t i = begin; i < end; ++i) {
    const double residual = w * data.x[static_cast<std::size_t>(i)] + b - data.y[static_cast<std::size_t>(i)];
    sum_rr += residual * residual;
    sum_abs_r += std::fabs(residual);
  }
  const Extent extent = extent_of(data, begin, end);
  const double delta = residual_rounding(std::fabs(w) * extent.x + std::fabs(b), extent.y);
  return TestMse{sum_rr / data.split.test, mse_rounding(delta, sum_abs_r / data.split.test)};
}

Check check_against(const TrainingResult& got, const TrainingResult& want, Tolerance parameters, Tolerance losses,
                    const std::string& reference_name) {
  Check c;
  if (want.diverged_at || got.diverged_at) {
    c.ok = want.diverged_at == got.diverged_at;
    auto epoch = [](const std::optional<int>& e) { return e ? std::to_string(*e) : std::string("-"); };
    if (!c.ok) {
      c.failure = "diverged at epoch " + epoch(got.diverged_at) + ", " + reference_name + " at epoch " +
                  epoch(want.diverged_at);
    }
    return c;
  }
  c.w = relative_error(got.w, want.w);
  c.b = relative_error(got.b, want.b);
  c.test_mse = relative_error(got.test_mse, want.test_mse);
  // Each loss within the relative tolerance plus what float32 residuals can move it (the
  // reference's loss_rounding; 0 where the reference is a run).
  auto rounding = [&](std::size_t e) { return e < want.loss_rounding.size() ? want.loss_rounding[e] : 0.0; };
  std::size_t outside = 0, first = 0;
  for (std::size_t e = 0; e < got.losses.size() && e < want.losses.size(); ++e) {
    c.losses = std::max(c.losses, relative_error(got.losses[e], want.losses[e]));
    if (!within(got.losses[e], want.losses[e], Tolerance{losses.abs + rounding(e), losses.rel}) && outside++ == 0) {
      first = e;
    }
  }
  const Tolerance test_tolerance{losses.abs + want.test_mse_rounding, losses.rel};
  if (!within(got.w, want.w, parameters)) c.failure = "w differs from " + reference_name;
  else if (!within(got.b, want.b, parameters)) c.failure = "b differs from " + reference_name;
  else if (got.losses.size() != want.losses.size()) {
    c.failure = std::to_string(got.losses.size()) + " losses, " + reference_name + " has " +
                std::to_string(want.losses.size());
  } else if (outside > 0) {
    std::ostringstream m;
    m << "losses differ from " << reference_name << " at " << outside << " of " << got.losses.size()
      << " epochs, first at epoch " << first << ": got " << got.losses[first] << ", want " << want.losses[first];
    c.failure = m.str();
  } else if (!within(got.test_mse, want.test_mse, test_tolerance)) {
    c.failure = "test MSE differs from " + reference_name;
  }
  c.ok = c.failure.empty();
  return c;
}

std::vector<int> printed_epochs(int epochs_run, int print_every) {
  std::vector<int> epochs;
  for (int e = 0; e < epochs_run; e += print_every) epochs.push_back(e);
  return epochs;
}

}  // namespace workbook::regression

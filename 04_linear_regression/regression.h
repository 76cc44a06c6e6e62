// regression.h: the problem of "Phase 3: Performance Comparison for PyTorch and CUDA" (y = w*X + b,
// full-batch MSE + SGD) in plain C++: its data, its float64 reference, and the float32 CPU version.
//
//   workbook::regression::Config config;                  // 5M points, 200 epochs, lr 0.01, ...
//   workbook::regression::validate(config);               // UsageError with a one-line reason
//   Dataset data = make_dataset_cpu(config);               // X, y exactly as the GPU makes them
//   TrainingResult want = train_reference(data, config);  // the recurrence in double
//   TrainingResult got = train_cpu(data, config);         // float32, op by op, like PyTorch CPU
//
// Chapter 05 reuses this header (data, reference, tolerances, divergence rule) unchanged.
// Plain C++: no CUDA types here, so g++ and nvcc both compile it.
#pragma once

#include "compare.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace workbook::regression {

// The article's constants. X_i = i * kXStep (so 5M points cover [0, 10)), y = kTrueW * X + kTrueB.
inline constexpr float kXStep = 0.000002f;
inline constexpr float kTrueW = 0.7f;
inline constexpr float kTrueB = 0.3f;
inline constexpr float kInitialW = 0.83f;
inline constexpr float kInitialB = 0.7645f;

struct Config {
  std::int64_t points = 5'000'000;
  int epochs = 200;
  double lr = 0.01;
  double noise = 0.0;        // standard deviation of the Gaussian noise added to y
  std::uint64_t seed = 42;   // cuRAND seed for that noise
  int print_every = 10;      // print (and, on the GPU, synchronize for) the loss every this many epochs
};

// Throws UsageError: points < 2, epochs < 1, lr not finite or <= 0, noise < 0 or not finite,
// print_every < 1.
void validate(const Config& config);

// The first 80% of the points (by index) train, the rest test; both have at least one point.
struct Split {
  std::int64_t train = 0;
  std::int64_t test = 0;
};
Split split_of(std::int64_t points);

// Float32 data, as both the GPU and the CPU version train on it.
struct Dataset {
  std::vector<float> x;
  std::vector<float> y;
  Split split;
};

// X_i and the noiseless y_i, computed with the same float32 operations as the GPU's data kernel
// (a product, then a product and a sum, each rounded once), so the two agree bit for bit.
float x_at(std::int64_t i);
float y_clean(float x);

// The host-side twin of the GPU's data generation: the same formula, and the noise from cuRAND's
// host generator (Philox4x32-10, same seed) instead of its device generator. Runs without a GPU.
Dataset make_dataset_cpu(const Config& config);

// Training stops when the loss is not finite or exceeds this many times the first epoch's loss.
inline constexpr double kDivergenceFactor = 1e10;
bool is_divergent(double loss, double first_loss);

// Per-epoch time of each training step, in milliseconds (medians over the epochs of one run).
struct StepTimes {
  double forward = 0.0;
  double loss = 0.0;
  double backward = 0.0;
  double step = 0.0;
  double total() const { return forward + loss + backward + step; }
};

struct TrainingResult {
  double w = 0.0;
  double b = 0.0;
  double test_mse = 0.0;
  std::vector<double> losses;        // training loss of every epoch run (before that epoch's step)
  std::optional<int> diverged_at;    // first divergent epoch; then w, b and test_mse mean nothing
  double training_ms = 0.0;          // the epoch loop alone (no data generation, no test pass)
  std::optional<StepTimes> step_times;
};

// Called with (epoch, loss) at every printed epoch (epoch % print_every == 0), as training goes.
using LossPrinter = std::function<void(int epoch, double loss)>;

// The float64 reference: the same recurrence (w <- w - lr * 2/n * sum(r X), b <- b - lr * 2/n * sum(r),
// r = w X + b - y) on the same float32 data, every operation and every sum in double, w and b kept
// in double. What float32 kernels compute differs from it only by float32 rounding.
TrainingResult train_reference(const Dataset& data, const Config& config);

// The CPU version: the four steps as separate functions (the twins of the four kernels), all in
// float32 like a float32 PyTorch model, on one core. StepTiming::kOn fills step_times.
enum class StepTiming { kOff, kOn };
TrainingResult train_cpu(const Dataset& data, const Config& config, const LossPrinter& print = {},
                         StepTiming timing = StepTiming::kOff);

// The CPU twins of the kernels, one per training step.
void forward_cpu(const float* x, float w, float b, float* pred, std::int64_t n);
float mse_loss_cpu(const float* pred, const float* y, std::int64_t n);
void mse_backward_cpu(const float* pred, const float* y, const float* x, std::int64_t n, float* grad_w,
                      float* grad_b);
void sgd_step_cpu(float* param, float grad, float lr);

// How close a float32 run must land to the reference (the chapter's tolerances). Float32 rounding
// moves w and b by about 1e-7 relative and the losses by about 2e-6 at 5M points (see README).
inline constexpr Tolerance kParameterTolerance{0.0, 1e-5};
inline constexpr Tolerance kLossTolerance{0.0, 1e-4};

// The printed epochs: 0, print_every, 2 * print_every, ... below `epochs_run`.
std::vector<int> printed_epochs(int epochs_run, int print_every);

}  // namespace workbook::regression

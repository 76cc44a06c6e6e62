// regression_problem.h: the problem chapters 04, 05 and 06 train, in plain C++: the article's
// y = w*X + b with full-batch MSE + SGD ("Phase 3: Performance Comparison for PyTorch and CUDA"),
// its data, its float64 reference, and the check every GPU result must pass.
//
//   workbook::regression::Config config;                  // 5M points, 200 epochs, lr 0.01, ...
//   workbook::regression::validate(config);               // UsageError with a one-line reason
//   Dataset data = make_dataset_cpu(config);               // X, y exactly as the GPU makes them
//   TrainingResult want = train_reference(data, config);  // the recurrence in double
//   Check c = check_against(got, want);                    // 04's tolerances, every epoch's loss
//
// No CUDA types here: g++ and nvcc both compile it. The GPU's data kernel: regression_data.h.
#pragma once

#include "compare.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
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
  int print_every = 10;      // print the loss every this many epochs
};

// Throws UsageError: points < 2, epochs < 1, lr not finite or <= 0, noise < 0 or not finite,
// print_every < 1.
void validate(const Config& config);

// X grows with N (X = i * 2e-6), and with lr 0.01 the recurrence diverges above about 10.7M points
// (X past 17). Runs above the article's 5M points keep lr * E[x^2] at the article's value:
// base_lr * (5M / N)^2. Epoch time does not depend on lr.
inline constexpr std::int64_t kArticlePoints = 5'000'000;
// The most epochs a run takes: every epoch keeps its loss (4 bytes on the GPU, more on the host),
// and a typo such as 2147483647 would run for days while its memory grows.
inline constexpr int kMaxEpochs = 1'000'000;
double scaled_lr(double base_lr, std::int64_t points);

// The first 80% of the points (by index) train, the rest test; both have at least one point.
struct Split {
  std::int64_t train = 0;
  std::int64_t test = 0;
};
Split split_of(std::int64_t points);

// Float32 data, as both the GPU and the CPU versions train on it.
struct Dataset {
  std::vector<float> x;
  std::vector<float> y;
  Split split;
};

// X_i and the noiseless y_i, computed with the same float32 operations as the GPU's data kernel
// (a product, then a product and a sum, each rounded once), so the two agree bit for bit.
float x_at(std::int64_t i);
float y_clean(float x);

// The host-side twin of the GPU's data: the same formula, and the noise from cuRAND's host
// generator (Philox4x32-10, same seed) instead of its device generator. Runs without a GPU.
Dataset make_dataset_cpu(const Config& config);
// What make_dataset_cpu asks of the host before it allocates (x, y, and as much again for what a
// CPU run keeps beside them): throws HostMemoryError, one line naming --points, when it does not fit.
void require_host_dataset(const Config& config);

// Normals the noise needs: cuRAND's Box-Muller makes them in pairs, so an even count.
std::int64_t noise_count(std::int64_t points);

// Training stops when the loss is not finite or exceeds this many times the first epoch's loss.
inline constexpr double kDivergenceFactor = 1e10;
bool is_divergent(double loss, double first_loss);

struct TrainingResult {
  double w = 0.0;
  double b = 0.0;
  double test_mse = 0.0;
  std::vector<double> losses;        // training loss of every epoch run (before that epoch's step)
  std::optional<int> diverged_at;    // first divergent epoch; then w, b and test_mse mean nothing
  double training_ms = 0.0;          // the epoch loop alone (no data generation, no test pass)
  // Set by the references only: how far float32 residuals alone can move each epoch's loss and
  // the test MSE (residual_rounding below). Empty or 0 for a run.
  std::vector<double> loss_rounding;
  double test_mse_rounding = 0.0;
};

// A float32 residual r = w X + b - y takes at most three roundings of numbers no larger than
// m = max(|w| max X + |b|, max |y|), each within half an ulp of m, so it is within 2^-22 m of the
// exact r; a mean of r^2 is then within 2 delta mean|r| + delta^2. The references add this to the
// relative tolerance: it stays below 3e-5 relative at 04's defaults (test_04 checks it),
// and it is all that float32 can promise as the loss approaches 0.
double residual_rounding(double largest_prediction, double largest_y);
double mse_rounding(double delta, double mean_abs_residual);

// The first epoch whose loss is divergent, if any.
std::optional<int> first_divergent(const std::vector<double>& losses);

// The float64 reference: the same recurrence (w <- w - lr * 2/n * sum(r X), b <- b - lr * 2/n * sum(r),
// r = w X + b - y) on the same float32 data, every operation and every sum in double, and w and b
// stored in float32 after each step, as every run stores them. What float32 kernels compute
// differs from it only by float32 rounding.
TrainingResult train_reference(const Dataset& data, const Config& config);
// The test loss of (w, b) in double: the mean of r^2 over the test split (the reference's own,
// and 04's mini-batch reference's), and how far float32 residuals can move it.
struct TestMse {
  double mse = 0.0;
  double rounding = 0.0;
};
TestMse test_mse_reference(const Dataset& data, double w, double b);
// A reference's last step, full-batch or mini-batch: its final w and b, and their test loss.
void finish_reference(TrainingResult& r, const Dataset& data, float w, float b);

// How close a float32 run must land to the reference. Float32 rounding moves w and b by about
// 1e-7 relative and the losses by about 2e-6 at 5M points (chapter 04's README). A loss may also
// differ by the reference's loss_rounding (above).
inline constexpr Tolerance kParameterTolerance{0.0, 1e-5};
inline constexpr Tolerance kLossTolerance{0.0, 1e-4};

// A run against its reference: relative errors, and the first thing outside tolerance. When
// either side diverged, the check passes only if both diverged at the same epoch.
struct Check {
  bool ok = false;
  std::string failure;                                    // empty when ok
  double w = 0.0, b = 0.0, losses = 0.0, test_mse = 0.0;  // relative errors (losses: the worst epoch)
};
Check check_against(const TrainingResult& got, const TrainingResult& want, Tolerance parameters = kParameterTolerance,
                    Tolerance losses = kLossTolerance, const std::string& reference_name = "the float64 reference");

// The printed epochs: 0, print_every, 2 * print_every, ... below `epochs_run`.
std::vector<int> printed_epochs(int epochs_run, int print_every);

}  // namespace workbook::regression

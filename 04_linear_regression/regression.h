// regression.h: chapter 04's CPU version of the article's training loop: the four steps as
// separate functions (the twins of the four kernels), all in float32, like a float32 PyTorch model
// on one core. The problem itself (data, float64 reference, tolerances, the check) is
// common/regression_problem.h, shared with chapters 05 and 06.
//
//   Dataset data = make_dataset_cpu(config);                    // common/regression_problem.h
//   StepTimes steps;
//   TrainingResult got = train_cpu(data, config, print, &steps);
#pragma once

#include "regression_problem.h"

#include <cstdint>
#include <functional>

namespace workbook::regression {

// Per-epoch time of each training step, in milliseconds (medians over the epochs of one run).
struct StepTimes {
  double forward = 0.0;
  double loss = 0.0;
  double backward = 0.0;
  double step = 0.0;
  double total() const { return forward + loss + backward + step; }
};

// Called with (epoch, loss) at every printed epoch (epoch % print_every == 0), as training goes.
using LossPrinter = std::function<void(int epoch, double loss)>;

// The CPU version, from w = 0.83, b = 0.7645; `steps`, when given, gets each step's median time.
TrainingResult train_cpu(const Dataset& data, const Config& config, const LossPrinter& print = {},
                         StepTimes* steps = nullptr);

// The CPU twins of the kernels, one per training step.
void forward_cpu(const float* x, float w, float b, float* pred, std::int64_t n);
float mse_loss_cpu(const float* pred, const float* y, std::int64_t n);
void mse_backward_cpu(const float* pred, const float* y, const float* x, std::int64_t n, float* grad_w,
                      float* grad_b);
void sgd_step_cpu(float* param, float grad, float lr);

}  // namespace workbook::regression

// minibatch.h: chapter 04's second story, mini-batch SGD with the training set in host memory
// (what a DataLoader feeds a PyTorch loop). This part is the plan and its references, in plain
// C++: the order of the batches, the float64 reference that follows it, and the float32 CPU twin.
//
//   const BatchPlan plan{65'536, true, 42};         // --batch-size, --shuffle, --seed
//   validate(plan, split.train);                     // UsageError naming --batch-size
//   TrainingResult want = train_minibatch_reference(data, config, plan);
//
// A batch is a contiguous slice of the training points (batch k: points [k B, min((k + 1) B, n))),
// so that each one is one copy; shuffling permutes the order in which the batches are visited,
// afresh every epoch, from the seed. Each step applies 04's update to the batch: the loss and
// both gradients are means over the batch's points.
#pragma once

#include "regression_problem.h"

#include <cstdint>
#include <vector>

namespace workbook::regression {

struct BatchPlan {
  std::int64_t batch_size = 65'536;  // points per step
  bool shuffle = false;              // visit the batches in a new order every epoch
  std::uint64_t seed = 42;           // of that order
};

// Throws UsageError: a batch size below 1, or above the training points.
void validate(const BatchPlan& plan, std::int64_t train_points);

// Batches of one epoch: the last one holds what is left (train_points % batch_size, if not 0).
std::int64_t batch_count(std::int64_t train_points, std::int64_t batch_size);

// The first point and the number of points of batch k.
struct BatchSlice {
  std::int64_t first = 0;
  std::int64_t count = 0;
};
BatchSlice batch_slice(std::int64_t k, std::int64_t train_points, std::int64_t batch_size);

// The order of the batches in `epoch`: 0, 1, ... unshuffled; otherwise a Fisher-Yates shuffle
// driven by splitmix64 seeded with (seed, epoch), a generator small enough to restate in Python
// (pytorch_regression.py does) so that both sides visit the batches in the same order.
std::vector<std::int64_t> batch_order(std::int64_t batches, const BatchPlan& plan, int epoch);

// The next number of splitmix64 (Steele, Lea and Flood), advancing `state`.
std::uint64_t splitmix64(std::uint64_t& state);

// Mini-batch SGD from w = 0.83, b = 0.7645, every product, sum and parameter in double, on the
// float32 data. losses[e] is the mean over epoch e's steps of each batch's loss before its step.
TrainingResult train_minibatch_reference(const Dataset& data, const Config& config, const BatchPlan& plan);

// The same steps in float32, with 04's CPU twins (forward_cpu, mse_loss_cpu, mse_backward_cpu,
// sgd_step_cpu) applied to each batch.
TrainingResult train_minibatch_cpu(const Dataset& data, const Config& config, const BatchPlan& plan);

}  // namespace workbook::regression

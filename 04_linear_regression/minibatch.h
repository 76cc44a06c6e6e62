// minibatch.h: chapter 04's second story, mini-batch SGD with the training set in host memory
// (what a DataLoader feeds a PyTorch loop). This part is the plan and its references, in plain
// C++: the order of the batches, the reference that follows it (float64 sums), and the float32
// CPU twin.
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
#include "report.h"

#include <cuda_runtime_api.h>

#include "splitmix64.h"  // workbook::splitmix64: batch_order's generator

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace workbook {
class TraceRecorder;  // common/trace.h
}

namespace workbook::linear_regression {
using namespace regression;  // the problem (Config, Dataset, the reference): common/'s, as in linear_regression.h

struct BatchPlan {
  std::int64_t batch_size = 65'536;  // points per step
  bool shuffle = false;              // visit the batches in a new order every epoch
  std::uint64_t seed = 42;           // of that order
};

// Throws UsageError naming `flag`: a batch size below 1, above the training points, or making more
// than kMaxSteps steps in all.
inline constexpr std::int64_t kMaxSteps = 10'000'000;
void validate(const BatchPlan& plan, std::int64_t train_points, int epochs, const std::string& flag = "--batch-size");

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
// (common/regression_torch.py does) so that both sides visit the batches in the same order.
std::vector<std::int64_t> batch_order(std::int64_t batches, const BatchPlan& plan, int epoch);


// Mini-batch SGD from w = 0.83, b = 0.7645 on the float32 data, every product and sum in double,
// w and b stored in float32 after each step (as a run stores them: with batches of a few points a
// step is a few ulps of w, and a float64 w would keep what every float32 run must round away).
// losses[e] is the mean over epoch e's steps of each batch's loss before its step.
TrainingResult train_minibatch_reference(const Dataset& data, const Config& config, const BatchPlan& plan);

// The check of a mini-batch run. Without noise, many small steps drive the loss down to the
// float32 rounding floor (about 1e-13, where a float64 loss goes on to about 1e-14), so
// relative errors of the losses and the test MSE mean nothing there: below an absolute 1e-9 (a
// residual of about 3e-5) a loss is accepted. w and b keep 04's relative tolerance.
inline constexpr Tolerance kMiniBatchLossTolerance{1e-9, kLossTolerance.rel};
Check check_minibatch(const TrainingResult& got, const TrainingResult& want);

// The same steps in float32, with 04's CPU twins (forward_cpu, mse_loss_cpu, mse_backward_cpu,
// sgd_step_cpu) applied to each batch.
TrainingResult train_minibatch_cpu(const Dataset& data, const Config& config, const BatchPlan& plan);

// ---------------------------------------------------------------------------------------------
// The GPU side: the training set stays in host memory and reaches the GPU batch by batch, by
// one of five pipelines, each a step closer to what the bus allows.
enum class Pipeline {
  kPageable = 1,   // x.to('cuda') per batch from plain host memory: a staged, synchronous copy
  kStaged = 2,     // one pinned staging buffer: copy in on the host, copy over, train, repeat
  kRing = 3,       // DataLoader(pin_memory=True): host threads fill a ring of pinned slots while
                   // the copy stream moves the previous ones and the GPU trains on them
  kPinnedSet = 4,  // the whole training set pinned once: each batch copied straight from it
  kBatched = 5,    // as 4, but the copies of up to kCopyGroup steps go in one cudaMemcpyBatchAsync
};
inline constexpr int kPipelineCount = 5;
inline constexpr int kRingSlots = 4;   // pinned and device slots of pipelines 3 and 4
inline constexpr int kCopyGroup = 16;  // steps whose batches pipeline 5 copies in one call
const char* pipeline_name(Pipeline p);  // "pageable", "staged", "ring", "pinned_set", "batched"

struct MinibatchRun {
  TrainingResult result;       // checked against train_minibatch_reference
  double ms = 0.0;             // all epochs, host clock, from the first copy to the last step
  double last_epoch_ms = 0.0;  // the last epoch, CUDA events
  double copy_busy_ms = 0.0;   // the last epoch's host-to-device copies, CUDA events, summed
};

// Off unless linear_regression_bench --trace asks (the lesson never does): a pair of CUDA events
// around the copy ("H2D batch k", category copy_in) and the step ("step k", compute) of the first
// `steps` steps of the last epoch, k counting that epoch's steps from 0, each op on the track of
// the stream it was queued on. Pipelines 1 and 2 queue their copies on the compute stream too.
struct StepTrace {
  TraceRecorder* recorder = nullptr;
  int compute_track = 0;
  int copy_track = 1;
  int steps = 8;
};

// Trains on the current device from the host data `data` (made by make_dataset_cpu), the batches
// brought over by pipeline p; `fill_threads` host threads fill pipeline 3's ring.
MinibatchRun train_minibatch_gpu(const Dataset& data, const Config& config, const BatchPlan& plan, Pipeline p,
                                 int fill_threads, cudaStream_t compute, cudaStream_t copy,
                                 const StepTrace& trace = {});

// The best host-to-device rate of this machine: a pinned copy of `bytes`, median of 10, GB/s.
double pinned_h2d_gbps(std::size_t bytes, cudaStream_t stream);

// The lesson's second part (linear_regression --batch-size B): the float64 reference of the same
// batch order, then every pipeline (the CPU twin with --device cpu) checked against it, then
// timed, then one table. The training set is `data`, in host memory.
void minibatch_story(Report& report, const Dataset& data, const Config& config, const BatchPlan& plan, bool cpu,
                     int fill_threads, bool quick);

}  // namespace workbook::linear_regression

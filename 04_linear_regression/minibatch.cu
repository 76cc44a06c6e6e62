// minibatch.cu: chapter 04's second story, mini-batch SGD with the training set in host memory.
// Read it beside "How to Use CUDA with PyTorch: Clearly Explained" (batching with a DataLoader)
// and "Understanding the Host and Device Paradigm" (pin_memory=True, non_blocking=True,
// prefetching). First the plan and its CPU references; the GPU pipelines follow them.
#include "minibatch.h"

#include "cli.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "format.h"
#include "fused_sums.cuh"
#include "linear_regression.h"
#include "stats.h"
#include "stream.h"
#include "table.h"
#include "trace.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
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
  r.w = w;
  r.b = b;
  const TestMse test = test_mse_reference(data, w, b);
  r.test_mse = test.mse;
  r.test_mse_rounding = test.rounding;
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
// One step on the GPU: a batch's three sums and the SGD step, in one launch. The last block to
//    finish adds every block's partials in a fixed order and steps (chapter 05's variant 4,
//    restated here on a batch; the building blocks are common/fused_sums.cuh).
namespace {

using fused::Sums;

__global__ void __launch_bounds__(fused::kThreads)
    batch_step_kernel(const float* x, const float* y, std::int64_t count, float* params, float* partials,
                      unsigned* done_count, float* step_loss, float lr) {
  const float w = params[0], b = params[1];  // read by every block before the last one steps
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Sums s = fused::block_sums<fused::kThreads>(
      fused::thread_sums(x, y, count, w, b, t, static_cast<std::int64_t>(gridDim.x) * blockDim.x));
  fused::write_partials(s, partials, static_cast<int>(gridDim.x));
  if (!fused::counted_last(done_count)) return;  // common/fused_sums.cuh: chapter 05's last-block pattern
  const Sums total = fused::reduce_partials(partials, gridDim.x, gridDim.x);
  if (threadIdx.x == 0) {
    const float inv = 1.0f / static_cast<float>(count);
    *step_loss = total.rr * inv;
    params[0] = w - lr * (2.0f * inv * total.rx);
    params[1] = b - lr * (2.0f * inv * total.r);
    *done_count = 0;  // ready for the next step
  }
}

// The device side of a run: the parameters, the reduction's scratch, a loss per step, and
// kRingSlots device slots a batch is copied into.
struct DeviceSide {
  DeviceSide(std::int64_t batch_size, std::int64_t steps, int multiprocessors)
      : blocks(fused::fused_blocks(batch_size, multiprocessors)),
        params(2), partials(3 * static_cast<std::size_t>(blocks)), done_count(1), step_losses(steps) {
    for (int k = 0; k < kRingSlots; ++k) {
      x.emplace_back(batch_size);
      y.emplace_back(batch_size);
    }
  }
  int blocks;
  DeviceBuffer<float> params, partials;
  DeviceBuffer<unsigned> done_count;
  DeviceBuffer<float> step_losses;
  std::vector<DeviceBuffer<float>> x, y;

  void launch_step(int slot, std::int64_t count, std::int64_t step, float lr, cudaStream_t stream) {
    batch_step_kernel<<<blocks, fused::kThreads, 0, stream>>>(x[slot].data(), y[slot].data(), count, params.data(),
                                                               partials.data(), done_count.data(),
                                                               step_losses.data() + step, lr);
    CUDA_CHECK_LAUNCH();
  }
};

// What every pipeline visits: step i trains batch order[i / batches][i % batches].
struct Schedule {
  std::int64_t batches = 0, steps = 0;
  std::vector<std::vector<std::int64_t>> orders;  // per epoch
  std::int64_t batch(std::int64_t step) const { return orders[step / batches][step % batches]; }
};

Schedule make_schedule(std::int64_t train_points, const Config& config, const BatchPlan& plan) {
  Schedule s;
  s.batches = batch_count(train_points, plan.batch_size);
  s.steps = s.batches * config.epochs;
  for (int e = 0; e < config.epochs; ++e) s.orders.push_back(batch_order(s.batches, plan, e));
  return s;
}

// Events around the copies of the last epoch, and around that epoch: the copy engine's share.
// The loops hand it each copy and each step to queue, so that it can put events around them;
// with a StepTrace (the bench's --trace), it also records a few of them on the trace.
class LastEpochClock {
 public:
  LastEpochClock(const Schedule& s, const StepTrace& trace, cudaStream_t copy_stream)
      : first_step_(s.steps - s.batches), trace_(trace), copy_stream_(copy_stream) {
    starts_.reserve(s.batches);
    stops_.reserve(s.batches);
    for (std::int64_t k = 0; k < s.batches; ++k) {
      starts_.emplace_back(EventTiming::kEnabled);
      stops_.emplace_back(EventTiming::kEnabled);
    }
  }
  template <class Enqueue>
  void copy(std::int64_t i, cudaStream_t stream, Enqueue&& enqueue) {
    const std::int64_t k = i - first_step_;  // the step's place in the last epoch
    if (k == 0) epoch_start_.record(stream);
    if (k >= 0) starts_[k].record(stream);
    traced(k, stream, "H2D batch ", "copy_in", enqueue);
    if (k >= 0) stops_[k].record(stream);
  }
  template <class Enqueue>
  void step(std::int64_t i, cudaStream_t stream, Enqueue&& enqueue) {
    traced(i - first_step_, stream, "step ", "compute", enqueue);
  }
  void epoch_ends(cudaStream_t compute) { epoch_stop_.record(compute); }
  void read(MinibatchRun& run) const {  // after the last step has finished
    run.last_epoch_ms = elapsed_ms(epoch_start_, epoch_stop_);
    for (std::size_t k = 0; k < starts_.size(); ++k) run.copy_busy_ms += elapsed_ms(starts_[k], stops_[k]);
  }

 private:
  template <class Enqueue>
  void traced(std::int64_t k, cudaStream_t stream, const char* name, const char* category, Enqueue& enqueue) {
    if (trace_.recorder == nullptr || k < 0 || k >= trace_.steps) return enqueue();
    const int track = stream == copy_stream_ ? trace_.copy_track : trace_.compute_track;
    trace_.recorder->op(stream, track, name + std::to_string(k), category, enqueue);
  }

  std::int64_t first_step_;
  StepTrace trace_;
  cudaStream_t copy_stream_;
  std::vector<Event> starts_, stops_;
  Event epoch_start_{EventTiming::kEnabled}, epoch_stop_{EventTiming::kEnabled};
};

void copy_batch(DeviceSide& d, int slot, const float* x, const float* y, std::int64_t count, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d.x[slot].data(), x, count * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(d.y[slot].data(), y, count * sizeof(float), cudaMemcpyHostToDevice, stream));
}

// ---------------------------------------------------------------------------------------------
// The four pipelines. Each queues every step of every epoch; they differ in where a batch
//    comes from and what the host and the copy engine do while the GPU trains.

// (1) and (2): one stream, one slot. From pageable memory the driver stages each copy through a
// pinned buffer of its own and the host waits for it; from the one pinned staging buffer, the
// host must wait for the copy before it refills the buffer.
void one_batch_at_a_time(const Dataset& data, const Schedule& s, const BatchPlan& plan, float* stage_x,
                         float* stage_y, float lr, DeviceSide& d, LastEpochClock& clock, cudaStream_t stream) {
  const std::int64_t n = data.split.train;
  const bool staged = stage_x != nullptr;
  for (std::int64_t i = 0; i < s.steps; ++i) {
    const BatchSlice b = batch_slice(s.batch(i), n, plan.batch_size);
    const float* x = data.x.data() + b.first;
    const float* y = data.y.data() + b.first;
    if (staged) {
      CUDA_CHECK(cudaStreamSynchronize(stream));  // the previous copy has left the staging buffer
      std::memcpy(stage_x, x, b.count * sizeof(float));
      std::memcpy(stage_y, y, b.count * sizeof(float));
      x = stage_x;
      y = stage_y;
    }
    clock.copy(i, stream, [&] { copy_batch(d, 0, x, y, b.count, stream); });
    clock.step(i, stream, [&] { d.launch_step(0, b.count, i, lr, stream); });
  }
}

// (3): host threads fill kRingSlots pinned slots, batch i into slot i % kRingSlots, and the main
// thread copies each filled slot on the copy stream and trains on it on the compute stream.
// Events keep the order: a copy into device slot k waits for the step that last read it, the
// step waits for its copy, and a filler reuses a pinned slot only after its last copy is done.
class PinnedRing {
 public:
  // The pinned slots: allocated here, before the clock starts.
  PinnedRing(const Dataset& data, const Schedule& s, std::int64_t batch_size)
      : data_(data), s_(s), batch_size_(batch_size), filled_(kRingSlots, -1), copied_(kRingSlots) {
    for (int k = 0; k < kRingSlots; ++k) {
      x_.emplace_back(batch_size);
      y_.emplace_back(batch_size);
    }
  }
  // The filler threads, when the clock has started.
  void start(int threads) {
    if (threads < 1) throw std::invalid_argument("PinnedRing: at least one filler thread");
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));  // a new host thread starts on device 0: give it ours
    try {
      for (int f = 0; f < threads; ++f) fillers_.emplace_back([this, f, threads, device] { fill(f, threads, device); });
    } catch (...) {
      stop_and_join();  // the threads already running, before the exception leaves
      throw;
    }
  }
  ~PinnedRing() { stop_and_join(); }
  PinnedRing(const PinnedRing&) = delete;
  PinnedRing& operator=(const PinnedRing&) = delete;

  // Waits until batch step i is in its slot; returns the slot.
  int wait_filled(std::int64_t i) {
    const int slot = static_cast<int>(i % kRingSlots);
    std::unique_lock<std::mutex> lock(m_);
    changed_.wait(lock, [&] { return filled_[slot] == i || error_; });
    if (error_) std::rethrow_exception(error_);
    return slot;
  }
  const float* x(int slot) const { return x_[slot].data(); }
  const float* y(int slot) const { return y_[slot].data(); }
  // The copy of step i out of its slot is queued, `done` recorded after it.
  void copy_queued(std::int64_t i) {
    {
      std::lock_guard<std::mutex> lock(m_);
      queued_ = i + 1;
    }
    changed_.notify_all();
  }
  Event& copied(int slot) { return copied_[slot]; }

 private:
  void stop_and_join() noexcept {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : fillers_) t.join();
    fillers_.clear();
  }

  void fill(int f, int threads, int device) {
    try {
      CUDA_CHECK(cudaSetDevice(device));
      for (std::int64_t i = f; i < s_.steps; i += threads) {
        const int slot = static_cast<int>(i % kRingSlots);
        if (i >= kRingSlots) {  // the slot's previous batch must have been copied out
          std::unique_lock<std::mutex> lock(m_);
          changed_.wait(lock, [&] { return queued_ > i - kRingSlots || stop_; });
          if (stop_) return;
          lock.unlock();
          copied_[slot].synchronize();
        }
        const BatchSlice b = batch_slice(s_.batch(i), data_.split.train, batch_size_);
        std::memcpy(x_[slot].data(), data_.x.data() + b.first, b.count * sizeof(float));
        std::memcpy(y_[slot].data(), data_.y.data() + b.first, b.count * sizeof(float));
        {
          std::lock_guard<std::mutex> lock(m_);
          filled_[slot] = i;
        }
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_);
      error_ = std::current_exception();
      changed_.notify_all();
    }
  }

  const Dataset& data_;
  const Schedule& s_;
  std::int64_t batch_size_;
  std::vector<PinnedBuffer<float>> x_, y_;
  std::vector<std::int64_t> filled_;  // the step whose batch each slot holds
  std::vector<Event> copied_;         // per slot: its last copy to the device is done
  std::mutex m_;
  std::condition_variable changed_;
  std::int64_t queued_ = 0;  // copies queued so far
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> fillers_;
};

// (3) and (4): two streams and kRingSlots device slots; the batch comes from the ring's pinned
// slots, or straight from the pinned training set.
void overlapped(const Dataset& data, const Schedule& s, const BatchPlan& plan, PinnedRing* ring,
                const float* pinned_x, const float* pinned_y, float lr, DeviceSide& d, LastEpochClock& clock,
                cudaStream_t compute, cudaStream_t copy) {
  const std::int64_t n = data.split.train;
  std::vector<Event> arrived(kRingSlots), trained(kRingSlots);
  for (std::int64_t i = 0; i < s.steps; ++i) {
    const BatchSlice b = batch_slice(s.batch(i), n, plan.batch_size);
    const int slot = static_cast<int>(i % kRingSlots);
    const float* x = pinned_x + b.first;
    const float* y = pinned_y + b.first;
    if (ring != nullptr) {
      ring->wait_filled(i);
      x = ring->x(slot);
      y = ring->y(slot);
    }
    if (i >= kRingSlots) CUDA_CHECK(cudaStreamWaitEvent(copy, trained[slot].get(), 0));  // device slot free
    clock.copy(i, copy, [&] { copy_batch(d, slot, x, y, b.count, copy); });
    arrived[slot].record(copy);
    if (ring != nullptr) {
      ring->copied(slot).record(copy);
      ring->copy_queued(i);
    }
    CUDA_CHECK(cudaStreamWaitEvent(compute, arrived[slot].get(), 0));
    clock.step(i, compute, [&] { d.launch_step(slot, b.count, i, lr, compute); });
    trained[slot].record(compute);
  }
}

}  // namespace

const char* pipeline_name(Pipeline p) {
  switch (p) {
    case Pipeline::kPageable: return "pageable";
    case Pipeline::kStaged: return "staged";
    case Pipeline::kRing: return "ring";
    case Pipeline::kPinnedSet: return "pinned_set";
  }
  return "?";
}

MinibatchRun train_minibatch_gpu(const Dataset& data, const Config& config, const BatchPlan& plan, Pipeline p,
                                 int fill_threads, cudaStream_t compute, cudaStream_t copy, const StepTrace& trace) {
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t n = data.split.train;
  const Schedule s = make_schedule(n, config, plan);
  const float lr = static_cast<float>(config.lr);
  DeviceSide d(plan.batch_size, s.steps, multiprocessors);
  LastEpochClock clock(s, trace, copy);
  // Set-up, untimed: the parameters, the reduction's counter, and for (4) the pinned training set
  // (what x.pin_memory() does: a pinned allocation and one host copy).
  const float initial[2] = {kInitialW, kInitialB};
  CUDA_CHECK(cudaMemcpy(d.params.data(), initial, sizeof initial, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d.done_count.data(), 0, d.done_count.bytes()));
  PinnedBuffer<float> pinned_x(p == Pipeline::kPinnedSet ? n : 0), pinned_y(p == Pipeline::kPinnedSet ? n : 0);
  if (p == Pipeline::kPinnedSet) {
    std::memcpy(pinned_x.data(), data.x.data(), n * sizeof(float));
    std::memcpy(pinned_y.data(), data.y.data(), n * sizeof(float));
  }
  const std::int64_t stage = p == Pipeline::kStaged ? plan.batch_size : 0;
  PinnedBuffer<float> stage_x(stage), stage_y(stage);
  std::optional<PinnedRing> ring;
  if (p == Pipeline::kRing) ring.emplace(data, s, plan.batch_size);
  CUDA_CHECK(cudaDeviceSynchronize());

  // Timed: every step of every epoch, until the last has finished (the buffers outlive it).
  const auto start = std::chrono::steady_clock::now();
  if (ring) {
    ring->start(fill_threads);
    overlapped(data, s, plan, &*ring, nullptr, nullptr, lr, d, clock, compute, copy);
  } else if (p == Pipeline::kPinnedSet) {
    overlapped(data, s, plan, nullptr, pinned_x.data(), pinned_y.data(), lr, d, clock, compute, copy);
  } else {
    one_batch_at_a_time(data, s, plan, stage_x.data(), stage_y.data(), lr, d, clock, compute);
  }
  clock.epoch_ends(compute);
  CUDA_CHECK(cudaStreamSynchronize(compute));
  MinibatchRun run;
  run.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  clock.read(run);

  // The result: epoch losses (means of the step losses, in double), w and b; the test MSE once,
  // with 04's CPU twins on the host's test points.
  std::vector<float> step_losses(s.steps);
  float wb[2] = {};
  CUDA_CHECK(cudaMemcpy(step_losses.data(), d.step_losses.data(), d.step_losses.bytes(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(wb, d.params.data(), sizeof wb, cudaMemcpyDeviceToHost));
  for (int e = 0; e < config.epochs; ++e) {
    double sum = 0.0;
    for (std::int64_t k = 0; k < s.batches; ++k) sum += step_losses[e * s.batches + k];
    run.result.losses.push_back(sum / s.batches);
  }
  run.result.diverged_at = first_divergent(run.result.losses);
  if (run.result.diverged_at) run.result.losses.resize(*run.result.diverged_at + 1);
  run.result.w = wb[0];
  run.result.b = wb[1];
  run.result.test_mse = test_mse_cpu(data, wb[0], wb[1]);
  return run;
}

double pinned_h2d_gbps(std::size_t bytes, cudaStream_t stream) {
  PinnedBuffer<std::byte> host(bytes);
  DeviceBuffer<std::byte> device(bytes);
  std::memset(host.data(), 0, bytes);
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    start.record(stream);
    CUDA_CHECK(cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream));
    stop.record(stream);
    stop.synchronize();
    if (i >= 2) ms.push_back(elapsed_ms(start, stop));  // the first two are warm-up
  }
  return bytes / (median(ms) * 1e6);
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

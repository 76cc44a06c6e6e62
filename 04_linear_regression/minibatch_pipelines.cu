// minibatch_pipelines.cu: the GPU side of chapter 04's second story (minibatch.h): one kernel
// per step, and five pipelines that bring the batches from host memory, each a step closer to
// what the bus allows. Read minibatch.cu's plan and references first.
#include "minibatch.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "fused_sums.cuh"
#include "linear_regression.h"
#include "stats.h"
#include "stream.h"
#include "trace.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace workbook::linear_regression {

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

// The device side of a run: the parameters, the reduction's scratch, a loss per step, and the
// device slots a batch is copied into (kRingSlots, or pipeline 5's two groups).
struct DeviceSide {
  DeviceSide(std::int64_t batch_size, std::int64_t steps, int multiprocessors, int slots)
      : blocks(fused::fused_blocks(batch_size, multiprocessors)),
        params(2), partials(3 * static_cast<std::size_t>(blocks)), done_count(1), step_losses(steps) {
    for (int k = 0; k < slots; ++k) {
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
// with a StepTrace (the bench's --trace), it also records a few of them on the trace. A copy
// brings the batches of `steps` steps from step i on (pipeline 5 brings several at once).
class LastEpochClock {
 public:
  LastEpochClock(const Schedule& s, const StepTrace& trace, cudaStream_t copy_stream)
      : first_step_(s.steps - s.batches), trace_(trace), copy_stream_(copy_stream) {
    starts_.reserve(s.batches);
    stops_.reserve(s.batches);
    for (std::int64_t k = 0; k < s.batches; ++k) {  // at most one copy a step
      starts_.emplace_back(EventTiming::kEnabled);
      stops_.emplace_back(EventTiming::kEnabled);
    }
  }
  template <class Enqueue>
  void copy(std::int64_t i, cudaStream_t stream, Enqueue&& enqueue, std::int64_t steps = 1) {
    const std::int64_t k = i - first_step_;  // the step's place in the last epoch
    if (k == 0) epoch_start_.record(stream);
    if (k >= 0) starts_[copies_].record(stream);
    traced(k, stream, "copy_in", enqueue, [&] {
      return steps == 1 ? "H2D batch " + std::to_string(k)
                        : "H2D batches " + std::to_string(k) + "-" + std::to_string(k + steps - 1);
    });
    if (k >= 0) stops_[copies_++].record(stream);
  }
  template <class Enqueue>
  void step(std::int64_t i, cudaStream_t stream, Enqueue&& enqueue) {
    const std::int64_t k = i - first_step_;
    traced(k, stream, "compute", enqueue, [&] { return "step " + std::to_string(k); });
  }
  void epoch_ends(cudaStream_t compute) { epoch_stop_.record(compute); }
  void read(MinibatchRun& run) const {  // after the last step has finished
    run.last_epoch_ms = elapsed_ms(epoch_start_, epoch_stop_);
    for (std::size_t k = 0; k < copies_; ++k) run.copy_busy_ms += elapsed_ms(starts_[k], stops_[k]);
  }

 private:
  template <class Enqueue, class Name>  // name() makes the op's name, only for an op traced
  void traced(std::int64_t k, cudaStream_t stream, const char* category, Enqueue& enqueue, Name&& name) {
    if (trace_.recorder == nullptr || k < 0 || k >= trace_.steps) return enqueue();
    const int track = stream == copy_stream_ ? trace_.copy_track : trace_.compute_track;
    trace_.recorder->op(stream, track, name(), category, enqueue);
  }

  std::int64_t first_step_;
  StepTrace trace_;
  cudaStream_t copy_stream_;
  std::vector<Event> starts_, stops_;  // the last epoch's copies, copies_ of them so far
  std::size_t copies_ = 0;
  Event epoch_start_{EventTiming::kEnabled}, epoch_stop_{EventTiming::kEnabled};
};

void copy_batch(DeviceSide& d, int slot, const float* x, const float* y, std::int64_t count, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d.x[slot].data(), x, count * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(d.y[slot].data(), y, count * sizeof(float), cudaMemcpyHostToDevice, stream));
}

// ---------------------------------------------------------------------------------------------
// The five pipelines. Each queues every step of every epoch; they differ in where a batch
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

// (5): the pinned training set, as (4), but the batches of `group` steps of one epoch arrive in
// one cudaMemcpyBatchAsync: 2 x group pieces (each batch's x and y) for the driver to hand the
// copy engine at once, where (4) makes one call per piece and pays a call's fixed cost each time
// (linear_regression_bench --copy-sizes measures that cost). Two groups of device slots take
// turns: group g + 1 is copied while group g trains, and group g + 2 waits until g has trained.
void batched(const Dataset& data, const Schedule& s, const BatchPlan& plan, const float* pinned_x,
             const float* pinned_y, std::int64_t group, float lr, DeviceSide& d, LastEpochClock& clock,
             cudaStream_t compute, cudaStream_t copy) {
  const std::int64_t n = data.split.train;
  std::vector<void*> dsts(2 * group);
  std::vector<const void*> srcs(2 * group);
  std::vector<std::size_t> sizes(2 * group);
  cudaMemcpyAttributes attrs{};
  attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;  // the pinned set as the stream finds it
  std::size_t attrs_from = 0;                              // one set of attributes for every piece
  Event arrived[2], trained[2];
  std::int64_t steps = 0;  // in group g, which starts at step `first`: at most `group`, all of one epoch
  for (std::int64_t first = 0, g = 0; first < s.steps; first += steps, ++g) {
    steps = std::min(group, (first / s.batches + 1) * s.batches - first);
    const int half = static_cast<int>(g % 2);
    for (std::int64_t j = 0; j < steps; ++j) {
      const BatchSlice b = batch_slice(s.batch(first + j), n, plan.batch_size);
      const int slot = half * static_cast<int>(group) + static_cast<int>(j);
      dsts[2 * j] = d.x[slot].data();
      dsts[2 * j + 1] = d.y[slot].data();
      srcs[2 * j] = pinned_x + b.first;
      srcs[2 * j + 1] = pinned_y + b.first;
      sizes[2 * j] = sizes[2 * j + 1] = b.count * sizeof(float);
    }
    if (g >= 2) CUDA_CHECK(cudaStreamWaitEvent(copy, trained[half].get(), 0));  // its slots are free
    clock.copy(first, copy, [&] {
      CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), 2 * steps, &attrs, &attrs_from, 1, copy));
    }, steps);
    arrived[half].record(copy);
    CUDA_CHECK(cudaStreamWaitEvent(compute, arrived[half].get(), 0));
    for (std::int64_t j = 0; j < steps; ++j) {
      const std::int64_t i = first + j;
      const int slot = half * static_cast<int>(group) + static_cast<int>(j);
      const std::int64_t count = batch_slice(s.batch(i), n, plan.batch_size).count;
      clock.step(i, compute, [&] { d.launch_step(slot, count, i, lr, compute); });
    }
    trained[half].record(compute);
  }
}

}  // namespace

const char* pipeline_name(Pipeline p) {
  switch (p) {
    case Pipeline::kPageable: return "pageable";
    case Pipeline::kStaged: return "staged";
    case Pipeline::kRing: return "ring";
    case Pipeline::kPinnedSet: return "pinned_set";
    case Pipeline::kBatched: return "batched";
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
  const std::int64_t group = std::min<std::int64_t>(kCopyGroup, s.batches);  // (5)'s steps a copy
  DeviceSide d(plan.batch_size, s.steps, multiprocessors, p == Pipeline::kBatched ? static_cast<int>(2 * group) : kRingSlots);
  LastEpochClock clock(s, trace, copy);
  // Set-up, untimed: the parameters, the reduction's counter, and for (4) and (5) the pinned
  // training set (what x.pin_memory() does: a pinned allocation and one host copy).
  const float initial[2] = {kInitialW, kInitialB};
  CUDA_CHECK(cudaMemcpy(d.params.data(), initial, sizeof initial, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d.done_count.data(), 0, d.done_count.bytes()));
  const bool pinned_set = p == Pipeline::kPinnedSet || p == Pipeline::kBatched;
  PinnedBuffer<float> pinned_x(pinned_set ? n : 0), pinned_y(pinned_set ? n : 0);
  if (pinned_set) {
    std::memcpy(pinned_x.data(), data.x.data(), n * sizeof(float));
    std::memcpy(pinned_y.data(), data.y.data(), n * sizeof(float));
  }
  const std::int64_t stage = p == Pipeline::kStaged ? plan.batch_size : 0;
  PinnedBuffer<float> stage_x(stage), stage_y(stage);
  std::optional<PinnedRing> ring;
  if (p == Pipeline::kRing) ring.emplace(data, s, plan.batch_size);
  if (p == Pipeline::kBatched) {
    // compute-sanitizer's initcheck (CUDA 13.0) reports the steps' reads of what
    // cudaMemcpyBatchAsync wrote as reads of uninitialized memory: it does not see that call's
    // writes. Every byte does arrive (every step's bits are checked against the other pipelines',
    // and linear_regression_bench --copy-sizes compares the batch copy's bytes), so the slots are
    // zeroed once here, untimed, and initcheck goes on watching everything else.
    for (std::size_t k = 0; k < d.x.size(); ++k) {
      CUDA_CHECK(cudaMemset(d.x[k].data(), 0, d.x[k].bytes()));
      CUDA_CHECK(cudaMemset(d.y[k].data(), 0, d.y[k].bytes()));
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());

  // Timed: every step of every epoch, until the last has finished (the buffers outlive it).
  const auto start = std::chrono::steady_clock::now();
  if (ring) {
    ring->start(fill_threads);
    overlapped(data, s, plan, &*ring, nullptr, nullptr, lr, d, clock, compute, copy);
  } else if (p == Pipeline::kPinnedSet) {
    overlapped(data, s, plan, nullptr, pinned_x.data(), pinned_y.data(), lr, d, clock, compute, copy);
  } else if (p == Pipeline::kBatched) {
    batched(data, s, plan, pinned_x.data(), pinned_y.data(), group, lr, d, clock, compute, copy);
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

}  // namespace workbook::linear_regression

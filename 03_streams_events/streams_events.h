// streams_events.h: what chapter 03's lesson (streams_events.cu) offers plain C++: the kernels'
// launchers and the CPU twin, the three stages of one chunk, the schedules, the measurements of
// its stories and the calibration. The bench (bench_streams.cpp) and the tests link them from
// streams_events_core; the kernels themselves (__global__) stay in streams_events.cu.
//
//   Batch batch{h_in, h_out, d_in, d_out, chunk_elements, chunks, iterations};  // pinned host memory
//   enqueue_serial(batch, stream);               // one stream, one stage at a time
//   MultiStreamPipeline four(4);                 // chunk c goes to stream c % 4
//   four.enqueue(batch);                         // forks from four.origin() and joins back
//   TwoStreamPipeline article(chunks);           // transfer stream + compute stream + an event per chunk
//   article.enqueue(batch, Ordering::kEventWait);
//
// Every enqueue returns at once (the host only queues work): wait on origin() / compute() to see
// the results. Host buffers must be pinned, or cudaMemcpyAsync is no longer asynchronous.
#pragma once

#include "event_timer.h"
#include "overlap_bound.h"
#include "stats.h"
#include "stream.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace workbook::streams_events {

using workbook::Repeats;
using workbook::Stats;

// The compute stage: y <- decay * y + x, `iterations` times, starting from y = x. Each step is one
// fused multiply-add (2 FLOP), fmaf on both sides, so that the GPU and the CPU agree bit for bit.
// Its cost grows linearly with `iterations`, which is how compute is made as long as the copies.
inline constexpr float kDecay = 0.999f;

float transform_cpu(float x, int iterations);
void transform_cpu(const float* in, float* out, std::size_t n, int iterations);
void launch_transform(const float* in, float* out, std::size_t n, int iterations, cudaStream_t stream);

// One thread that spins on the GPU's nanosecond clock for `nanoseconds`, then (when `elapsed_out`
// is not null) writes how long it spun: "a long kernel" whose length is known in advance.
void launch_spin(long long nanoseconds, unsigned long long* elapsed_out, cudaStream_t stream);

// The whole workload: `chunks` chunks of `chunk_elements` floats, pinned on the host, and room
// for all of them on the device (so no chunk ever waits for a buffer to be recycled).
struct Batch {
  const float* host_in = nullptr;
  float* host_out = nullptr;
  float* dev_in = nullptr;
  float* dev_out = nullptr;
  std::size_t chunk_elements = 0;
  int chunks = 0;
  int iterations = 0;

  std::size_t offset(int chunk) const { return static_cast<std::size_t>(chunk) * chunk_elements; }
  std::size_t chunk_bytes() const { return chunk_elements * sizeof(float); }
  std::size_t total_elements() const { return static_cast<std::size_t>(chunks) * chunk_elements; }
};

// Each stage of one chunk, on the given stream; and all of them stage after stage on one stream.
void enqueue_copy_in(const Batch& b, int chunk, cudaStream_t stream);
void enqueue_compute(const Batch& b, int chunk, cudaStream_t stream);
void enqueue_copy_out(const Batch& b, int chunk, cudaStream_t stream);
void enqueue_serial(const Batch& b, cudaStream_t stream);

// Fork: streams[1..] wait for what streams[0] has queued so far. Join: streams[0] waits for
// everything the others queued. Both are GPU-side waits (cudaStreamWaitEvent): the host never blocks.
class ForkJoin {
 public:
  explicit ForkJoin(std::size_t width) : joined_(width) {}
  void fork(const std::vector<cudaStream_t>& streams);
  void join(const std::vector<cudaStream_t>& streams);

 private:
  workbook::Event forked_;
  std::vector<workbook::Event> joined_;
};

// Chunk c goes to stream c % K, all three stages of it.
class MultiStreamPipeline {
 public:
  explicit MultiStreamPipeline(int streams);
  void enqueue(const Batch& b);
  cudaStream_t origin() const { return handles_.front(); }
  int width() const { return static_cast<int>(handles_.size()); }

 private:
  std::vector<workbook::Stream> streams_;
  std::vector<cudaStream_t> handles_;
  ForkJoin fork_join_;
};

enum class Ordering {
  kEventWait,  // correct: the compute stream waits for the event recorded after each copy
  kNone,       // the bug: no wait, so the kernel may read a chunk before its copy has landed
};

// The article's pattern: a transfer stream copies chunks in, a compute stream computes and copies
// them out, and one event per chunk ("copied") orders the two. `producer_delay_ns` makes the
// transfer stream late on purpose (a spin kernel before each copy) so that a missing wait shows.
class TwoStreamPipeline {
 public:
  explicit TwoStreamPipeline(int chunks);
  void enqueue(const Batch& b, Ordering ordering, long long producer_delay_ns = 0);
  cudaStream_t compute() const { return compute_.get(); }
  cudaStream_t transfer() const { return transfer_.get(); }

 private:
  workbook::Stream transfer_;
  workbook::Stream compute_;
  std::vector<workbook::Event> copied_;
  ForkJoin fork_join_{2};
};

// 2. The stream is a queue: how long a launch took to return, whether the GPU was still
// busy then (in every round), how long the kernel ran, and how long reading its result blocked.
struct Asynchrony {
  Stats launch_us, kernel_ms, read_blocked_ms;
  bool returned_before_done = true;
};
Asynchrony measure_asynchrony(long long kernel_ns, int repeats);

// 5. What each way of waiting blocks: the host's time in each call while stream A runs a
// short job and stream B an unrelated long one.
struct Wait {
  const char* call;  // the CUDA call
  const char* what;  // its PyTorch spelling, and what it waits for
  Stats blocked_us;
};
struct Waits {
  double short_job_ms = 0.0, long_job_ms = 0.0;
  std::vector<Wait> methods;
};
Waits measure_waits(long long short_ns, long long long_ns, int repeats);

// 6. The default stream (default_stream.cu): kernel A on one stream, then kernel B on another; did B wait?
// The legacy default stream waits for blocking streams; non-blocking and per-thread ones do not.
struct DefaultStreamCase {
  std::string name;
  bool waited = false;                    // B started after A ended (GPU clock stamps)
  double b_start_after_a_start_us = 0.0;  // one run of each case
};
std::vector<DefaultStreamCase> measure_default_stream(long long kernel_ns);

// The stages of the whole batch, each alone on one stream; both copies at once on two streams;
// and the serial schedule. Rates from the medians.
struct Stages {
  Stats copy_in, compute, copy_out, copies_together, serial;
  double h2d_gbps = 0.0, d2h_gbps = 0.0, compute_gflops = 0.0;
  StageTimes medians() const { return {copy_in.median, compute.median, copy_out.median, copies_together.median}; }
};
Stages measure_stages(const Batch& b, cudaStream_t s0, cudaStream_t s1, Repeats repeats);

// The default workload's compute stage: as many multiply-adds as take as long as both copies
// running at once (copy_floor_ms), measured on this GPU.
struct Calibration {
  Stats copy_in, copy_out, copies_together;  // the copies alone, and both at once
  StageTimes copies;  // their medians (compute_ms unused)
  double target_ms = 0.0;
  int iterations = 0;
  int iterations_for_slower_copy = 0;  // what matching the slower copy alone would take
};
Calibration calibrate(Batch b, cudaStream_t s0, cudaStream_t s1, Repeats repeats);

}  // namespace workbook::streams_events

// streams_events.cu: chapter 03's lesson. A CUDA stream is an ordered queue: the host puts work in
// it and walks on. This file measures that (a launch returns in microseconds; reading the result
// waits for the GPU), pipelines a batch of chunks (copy in, compute, copy out) on one stream and
// on K streams against the best the hardware allows, builds the article's two-stream pattern with
// an event between the streams (and shows what a missing wait does), and times each way the host
// can wait. Read it beside "Understanding the Host and Device Paradigm" (asynchronous execution,
// CUDA streams, multiple streams, synchronization between streams, host-device synchronization)
// and the non_blocking=True part of "How to Use CUDA with PyTorch: Clearly Explained".
//
//   streams_events                         # check every schedule, then time it (a few seconds)
//   streams_events --streams 1,2,3,4,8     # other stream counts
//   streams_events --drop-wait             # the bug: no cudaStreamWaitEvent, so the check FAILs
//   streams_events --quick --json -        # what the tests run
//   streams_events_bench --trace t.json    # the timeline as a Chrome trace (bench_streams.cpp)
//
// In order: the CPU twin and the compute kernel, the spin kernel, the three stages of one chunk,
// then one function per idea: the stream is a queue (measure_asynchrony); K streams overlap the
// copies with compute (MultiStreamPipeline); the article's two streams, ordered by an event per
// chunk (TwoStreamPipeline); what each way of waiting blocks (measure_waits). main checks every
// schedule against the serial result bit for bit, and that against the CPU twin, then times them
// and prints one table.
#include "streams_events.h"
#include "results.h"
#include "workload.h"

#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "globaltimer.cuh"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "report.h"
#include "table.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace workbook::streams_events {

// ---------------------------------------------------------------------------------------------
// The compute stage and its CPU twin.

float transform_cpu(float x, int iterations) {
  float y = x;
  for (int k = 0; k < iterations; ++k) y = std::fma(y, kDecay, x);  // float overload: one rounding, as fmaf
  return y;
}

void transform_cpu(const float* in, float* out, std::size_t n, int iterations) {
  for (std::size_t i = 0; i < n; ++i) out[i] = transform_cpu(in[i], iterations);
}

namespace {

constexpr int kBlock = 256;
constexpr int kPerThread = 4;  // independent chains per thread
constexpr int kPerBlock = kBlock * kPerThread;

// Each thread runs kPerThread independent fmaf chains (elements base, base + 256, ...: every load
// and store stays coalesced across the warp). One chain per thread left the FP32 pipes half idle:
// the loop's own add, compare and branch took issue slots between the dependent fmaf. With four
// chains per loop step and the step unrolled, fmaf dominates the instruction stream.
__global__ void transform_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n,
                                 int iterations) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kPerBlock + threadIdx.x;
  float x[kPerThread], y[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * kBlock;
    x[j] = i < n ? in[i] : 0.0f;
    y[j] = x[j];
  }
#pragma unroll 4
  for (int k = 0; k < iterations; ++k) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) y[j] = fmaf(y[j], kDecay, x[j]);
  }
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * kBlock;
    if (i < n) out[i] = y[j];
  }
}

// "A long kernel" of known length: one thread spins on the GPU's nanosecond clock. It occupies a
// single SM slot and behaves the same under compute-sanitizer.
__global__ void spin_kernel(long long nanoseconds, unsigned long long* elapsed_out) {
  const unsigned long long start = workbook::global_timer_ns();
  unsigned long long now = start;
  while (now - start < static_cast<unsigned long long>(nanoseconds)) now = workbook::global_timer_ns();
  if (elapsed_out != nullptr) *elapsed_out = now - start;
}

}  // namespace

void launch_transform(const float* in, float* out, std::size_t n, int iterations, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>((n + kPerBlock - 1) / kPerBlock);
  transform_kernel<<<blocks, kBlock, 0, stream>>>(in, out, n, iterations);
  CUDA_CHECK_LAUNCH();
}

void launch_spin(long long nanoseconds, unsigned long long* elapsed_out, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(nanoseconds, elapsed_out);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// The three stages of one chunk, each queued on the stream it is given (with torch: gpu.copy_(cpu,
// non_blocking=True), the kernel, cpu.copy_(gpu, non_blocking=True) inside `with torch.cuda.stream(s)`).

void enqueue_copy_in(const Batch& b, int chunk, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(b.dev_in + b.offset(chunk), b.host_in + b.offset(chunk), b.chunk_bytes(),
                             cudaMemcpyHostToDevice, stream));
}

void enqueue_compute(const Batch& b, int chunk, cudaStream_t stream) {
  launch_transform(b.dev_in + b.offset(chunk), b.dev_out + b.offset(chunk), b.chunk_elements, b.iterations,
                   stream);
}

void enqueue_copy_out(const Batch& b, int chunk, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(b.host_out + b.offset(chunk), b.dev_out + b.offset(chunk), b.chunk_bytes(),
                             cudaMemcpyDeviceToHost, stream));
}

// Stage after stage on one stream: every copy in, then every kernel, then every copy out. This is
// what code without streams does, and the time the overlap is measured against.
void enqueue_serial(const Batch& b, cudaStream_t stream) {
  for (int c = 0; c < b.chunks; ++c) enqueue_copy_in(b, c, stream);
  for (int c = 0; c < b.chunks; ++c) enqueue_compute(b, c, stream);
  for (int c = 0; c < b.chunks; ++c) enqueue_copy_out(b, c, stream);
}

// ---------------------------------------------------------------------------------------------
// 2. The stream is a queue. The launch returns at once; reading the result (the article's
// print(gpu_tensor), or .item()) is a copy on the same stream and a wait for that stream.

Asynchrony measure_asynchrony(long long kernel_ns, int repeats) {
  workbook::NvtxRange range("asynchrony");
  workbook::Stream stream;
  workbook::DeviceBuffer<unsigned long long> d_result(1);
  workbook::PinnedBuffer<unsigned long long> h_result(1);
  workbook::Event start(workbook::EventTiming::kEnabled), stop(workbook::EventTiming::kEnabled);
  std::vector<double> launch_us, kernel_ms, read_ms;
  Asynchrony a;
  for (int r = 0; r < repeats + 1; ++r) {  // the first round is warm-up (module load)
    start.record(stream.get());
    const auto t0 = std::chrono::steady_clock::now();
    launch_spin(kernel_ns, d_result.data(), stream.get());
    const auto t1 = std::chrono::steady_clock::now();
    stop.record(stream.get());
    const cudaError_t query = cudaEventQuery(stop.get());  // is the GPU done yet? (e.query())
    const bool running = query == cudaErrorNotReady;
    if (running) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error; cleared defensively, as PyTorch does
    } else {
      CUDA_CHECK(query);
    }
    const auto t2 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaMemcpyAsync(h_result.data(), d_result.data(), sizeof(unsigned long long),
                               cudaMemcpyDeviceToHost, stream.get()));
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    const auto t3 = std::chrono::steady_clock::now();
    if (r == 0) continue;
    a.returned_before_done = a.returned_before_done && running;
    launch_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    read_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
    kernel_ms.push_back(workbook::elapsed_ms(start, stop));
  }
  a.launch_us = workbook::summarize(launch_us);
  a.kernel_ms = workbook::summarize(kernel_ms);
  a.read_blocked_ms = workbook::summarize(read_ms);
  return a;
}

// ---------------------------------------------------------------------------------------------
// 4. K streams overlap copy in, compute and copy out. Each stream's own order keeps each
// chunk correct; chunks on different streams overlap, on three pieces of hardware: the H2D copy
// engine, the SMs and the D2H copy engine. s2.wait_stream(s1) is an event recorded on s1 and
// waited for on s2: that is what fork and join do.

void ForkJoin::fork(const std::vector<cudaStream_t>& streams) {
  forked_.record(streams.front());
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaStreamWaitEvent(streams[k], forked_.get(), 0));
}

void ForkJoin::join(const std::vector<cudaStream_t>& streams) {
  if (streams.size() > joined_.size()) throw std::invalid_argument("ForkJoin::join: more streams than events");
  for (std::size_t k = 1; k < streams.size(); ++k) {
    joined_[k].record(streams[k]);
    CUDA_CHECK(cudaStreamWaitEvent(streams.front(), joined_[k].get(), 0));
  }
}

MultiStreamPipeline::MultiStreamPipeline(int streams)
    : streams_(static_cast<std::size_t>(streams)), fork_join_(static_cast<std::size_t>(streams)) {
  if (streams < 1) throw std::invalid_argument("MultiStreamPipeline needs at least one stream");
  for (const workbook::Stream& s : streams_) handles_.push_back(s.get());
}

void MultiStreamPipeline::enqueue(const Batch& b) {
  fork_join_.fork(handles_);
  for (int c = 0; c < b.chunks; ++c) {
    const cudaStream_t s = handles_[c % width()];
    enqueue_copy_in(b, c, s);
    enqueue_compute(b, c, s);
    enqueue_copy_out(b, c, s);
  }
  fork_join_.join(handles_);
}

// ---------------------------------------------------------------------------------------------
// 4. (continued) The article's two streams. The transfer stream copies chunk c in and records the event
// copied[c]; the compute stream waits for that event on the GPU (stream.wait_event(event): the
// host does not stop here), then computes chunk c and copies it out. Leave the wait out and the
// kernel may read the chunk before its copy has landed.

TwoStreamPipeline::TwoStreamPipeline(int chunks) : copied_(static_cast<std::size_t>(chunks)) {}

void TwoStreamPipeline::enqueue(const Batch& b, Ordering ordering, long long producer_delay_ns) {
  if (b.chunks > static_cast<int>(copied_.size())) {
    throw std::invalid_argument("TwoStreamPipeline: batch has more chunks than events");
  }
  const std::vector<cudaStream_t> both{compute(), transfer()};
  fork_join_.fork(both);
  for (int c = 0; c < b.chunks; ++c) {
    if (producer_delay_ns > 0) launch_spin(producer_delay_ns, nullptr, transfer());  // a late producer
    enqueue_copy_in(b, c, transfer());
    copied_[c].record(transfer());

    if (ordering == Ordering::kEventWait) CUDA_CHECK(cudaStreamWaitEvent(compute(), copied_[c].get(), 0));
    enqueue_compute(b, c, compute());
    enqueue_copy_out(b, c, compute());
  }
  fork_join_.join(both);
}

// ---------------------------------------------------------------------------------------------
// 5. What each way of waiting blocks. Stream A runs a short job, stream B an unrelated long
// one; the host wants A's result. Each call is timed on the host clock, from just after the
// launches to its return.

Waits measure_waits(long long short_ns, long long long_ns, int repeats) {
  workbook::NvtxRange range("waits");
  workbook::Stream a, b, consumer;
  workbook::Event a_done;
  enum Method { kDevice, kStream, kEvent, kGpuSide };
  Waits w{short_ns / 1e6, long_ns / 1e6,
          {{"cudaDeviceSynchronize", "torch.cuda.synchronize(): waits for every stream, B too", {}},
           {"cudaStreamSynchronize(A)", "stream_a.synchronize(): waits for A only", {}},
           {"cudaEventSynchronize(a_done)", "a_done.synchronize(): waits for A up to the event", {}},
           {"cudaStreamWaitEvent(C, a_done)", "stream_c.wait_event(a_done): the GPU waits, the host goes on", {}}}};
  for (int method = kDevice; method <= kGpuSide; ++method) {
    std::vector<double> us;
    for (int r = 0; r < repeats + 1; ++r) {  // the first round is warm-up
      launch_spin(short_ns, nullptr, a.get());
      a_done.record(a.get());
      launch_spin(long_ns, nullptr, b.get());
      const auto start = std::chrono::steady_clock::now();
      switch (method) {
        case kDevice: CUDA_CHECK(cudaDeviceSynchronize()); break;
        case kStream: CUDA_CHECK(cudaStreamSynchronize(a.get())); break;
        case kEvent: CUDA_CHECK(cudaEventSynchronize(a_done.get())); break;
        default: CUDA_CHECK(cudaStreamWaitEvent(consumer.get(), a_done.get(), 0)); break;
      }
      const auto stop = std::chrono::steady_clock::now();
      if (method == kGpuSide) launch_spin(1000, nullptr, consumer.get());  // runs only after A's job
      CUDA_CHECK(cudaDeviceSynchronize());  // untimed: start the next round from an idle GPU
      if (r > 0) us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    }
    w.methods[method].blocked_us = workbook::summarize(us);
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// 3. What overlap is measured against: each stage alone over the whole batch, both copies at
// once, and the serial schedule (overlap_bound.h turns these into the bound).

namespace {

using StageFn = void (*)(const Batch&, int, cudaStream_t);

Stats time_stage(const Batch& b, StageFn stage, cudaStream_t s, Repeats repeats) {
  return workbook::time_on_stream(s, repeats, [&] {
    for (int c = 0; c < b.chunks; ++c) stage(b, c, s);
  });
}

// Every H2D on one stream and every D2H on another, at once: what the link gives both directions.
Stats time_copies_together(const Batch& b, cudaStream_t s0, cudaStream_t s1, Repeats repeats) {
  const std::vector<cudaStream_t> both{s0, s1};
  ForkJoin pair(2);
  return workbook::time_on_stream(s0, repeats, [&] {
    pair.fork(both);
    for (int c = 0; c < b.chunks; ++c) enqueue_copy_in(b, c, s0);
    for (int c = 0; c < b.chunks; ++c) enqueue_copy_out(b, c, s1);
    pair.join(both);
  });
}

// Compute (all chunks, one stream) as a function of iterations is a line, a + b * iterations: two
// points give it, and it gives the iterations that make compute take any wanted time.
class ComputeLine {
 public:
  ComputeLine(Batch b, cudaStream_t stream) {
    auto compute_ms = [&](int iterations) {
      b.iterations = iterations;
      return time_stage(b, enqueue_compute, stream, Repeats{2, 5}).median;
    };
    t_low_ = compute_ms(kLow);
    per_iteration_ = (compute_ms(kHigh) - t_low_) / (kHigh - kLow);
  }
  int iterations_for(double target_ms) const {
    if (per_iteration_ <= 0.0) return kHigh;
    return static_cast<int>(std::clamp(kLow + (target_ms - t_low_) / per_iteration_, 1.0, 1e6));
  }

 private:
  static constexpr int kLow = 64, kHigh = 2048;
  double t_low_ = 0.0, per_iteration_ = 0.0;
};

}  // namespace

Stages measure_stages(const Batch& b, cudaStream_t s0, cudaStream_t s1, Repeats repeats) {
  workbook::NvtxRange range("stages");
  Stages t;
  t.copy_in = time_stage(b, enqueue_copy_in, s0, repeats);
  t.compute = time_stage(b, enqueue_compute, s0, repeats);
  t.copy_out = time_stage(b, enqueue_copy_out, s0, repeats);
  t.copies_together = time_copies_together(b, s0, s1, repeats);
  t.serial = workbook::time_on_stream(s0, repeats, [&] { enqueue_serial(b, s0); });
  const double bytes = static_cast<double>(b.total_elements() * sizeof(float));
  t.h2d_gbps = workbook::gigabytes_per_second(bytes, t.copy_in.median);
  t.d2h_gbps = workbook::gigabytes_per_second(bytes, t.copy_out.median);
  t.compute_gflops = 2.0 * b.iterations * static_cast<double>(b.total_elements()) / (t.compute.median * 1e6);
  return t;
}

// The target is the copies' floor, both directions at once, not the slower copy alone: with
// compute only as long as one copy, the copies (slowed by sharing the link) would be the real
// bottleneck and the bound from the stages alone could not be reached.
Calibration calibrate(Batch b, cudaStream_t s0, cudaStream_t s1, Repeats repeats) {
  workbook::NvtxRange range("calibrate");
  b.iterations = 64;
  enqueue_serial(b, s0);  // writes dev_out, so that timing the copy out reads initialised memory
  CUDA_CHECK(cudaStreamSynchronize(s0));
  Calibration c;
  c.copy_in = time_stage(b, enqueue_copy_in, s0, repeats);
  c.copy_out = time_stage(b, enqueue_copy_out, s0, repeats);
  c.copies_together = time_copies_together(b, s0, s1, repeats);
  c.copies.copy_in_ms = c.copy_in.median;
  c.copies.copy_out_ms = c.copy_out.median;
  c.copies.copies_together_ms = c.copies_together.median;
  const ComputeLine line(b, s0);
  c.target_ms = copy_floor_ms(c.copies);
  c.iterations = line.iterations_for(c.target_ms);
  c.iterations_for_slower_copy = line.iterations_for(std::max(c.copies.copy_in_ms, c.copies.copy_out_ms));
  return c;
}

}  // namespace workbook::streams_events

// ---------------------------------------------------------------------------------------------
// The program: 1. check every schedule (the serial one against the CPU twin, every other one
// against the serial one, bit for bit, and the ordering between the two streams), then time each
// step, 2. to 6., the schedules of step 4 in one table. (streams_events_bench and the tests link
// this file too, its main() renamed: cmake/WorkbookChapter.cmake.)
namespace workbook::streams_events {
namespace {

struct Options {
  CommonOptions common;
  WorkloadOptions workload;  // --chunks, --chunk-elements, --iterations (workload.cpp, shared with the bench)
  std::vector<int> streams{1, 2, 4, 8};
  int repeats = 20;
  bool drop_wait = false;
  int producer_delay_us = 1000;
};

// Every flag is checked before any CUDA call, so bad usage exits 2 even without a GPU.
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Streams and events: asynchrony, copy/compute overlap on K streams, and the cost of waiting"};
  add_common_options(app, o.common);
  add_workload_options(app, o.workload);
  auto set_streams = [&o](const std::string& text) { o.streams = parse_int_list("--streams", text, 1, 64); };
  auto* streams = app.add_option_function<std::string>("--streams", set_streams,
                                                       "stream counts K to run, each 1 to 64, e.g. 1,2,4,8")
                      ->type_name("K,K,...");
  auto* repeats = app.add_option("--repeats", o.repeats, "timed repeats of each schedule (default 20; --quick 3)");
  app.add_flag("--drop-wait", o.drop_wait,
               "the bug: leave out cudaStreamWaitEvent in the two-stream pattern (the check then FAILs)");
  app.add_option("--producer-delay-us", o.producer_delay_us,
                 "how late the slow producer of the ordering check is, per chunk (default 1000)");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  finish_workload_options(app, o.common.quick, o.workload);
  if (o.common.quick && streams->count() == 0) o.streams = {1, 2, 4};
  if (o.common.quick && repeats->count() == 0) o.repeats = 3;
  require_at_least("--repeats", o.repeats, 1);
  require_at_most("--repeats", o.repeats, 1000);
  require_at_least("--producer-delay-us", o.producer_delay_us, 1);
  require_at_most("--producer-delay-us", o.producer_delay_us, 1000000);
  return std::nullopt;
}

// Runs one schedule on poisoned buffers; returns how many elements differ from `serial` in any bit.
template <class Enqueue>
std::size_t run_checked(const Batch& b, const std::vector<float>& serial, cudaStream_t last, Enqueue&& enqueue) {
  poison(b);
  enqueue();
  CUDA_CHECK(cudaStreamSynchronize(last));
  return count_differences(b.host_out, serial.data(), b.total_elements());
}

// The serial schedule against the CPU twin on a sample (a stride, and every chunk's first and last
// element); its full output is then the answer every other schedule must give bit for bit.
std::vector<float> check_serial(const Batch& b, cudaStream_t s, Report& report) {
  NvtxRange range("reference");
  poison(b);
  enqueue_serial(b, s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  const std::size_t n = b.total_elements();
  const std::vector<float> serial(b.host_out, b.host_out + n);
  std::vector<float> got, want;
  auto sample = [&](std::size_t i) {
    got.push_back(serial[i]);
    want.push_back(transform_cpu(b.host_in[i], b.iterations));
  };
  for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 65536)) sample(i);
  for (int c = 0; c < b.chunks; ++c) {
    sample(b.offset(c));
    sample(b.offset(c) + b.chunk_elements - 1);
  }
  const Comparison cmp = compare(got, want, Tolerance{1e-6, 1e-6});
  report_reference_check(cmp, report);
  report.check(cmp.ok(), "serial GPU result differs from the CPU twin");
  return serial;
}

// The ordering check: a late producer and a poisoned destination make a missing wait show every
// time, in every element, instead of now and then (with the same inputs run after run, a chunk
// read too early would even hold the right answer from the previous run).
void check_ordering(const Batch& batch, TwoStreamPipeline& article, Ordering ordering, int delay_us,
                    const std::vector<float>& serial, Report& report) {
  NvtxRange range("ordering check");
  Batch few = batch;
  few.chunks = std::min(batch.chunks, 8);
  OrderingCheck o{ordering == Ordering::kNone, delay_us, few.total_elements(), 0};
  o.stale_elements =
      run_checked(few, serial, article.compute(), [&] { article.enqueue(few, ordering, 1000LL * delay_us); });
  report_ordering(o, few, serial.data(), report);
  report.check(o.stale_elements == 0, format("%zu of %zu elements were read before their copy landed (no event wait)",
                                             o.stale_elements, o.checked_elements));
}

// Every schedule of the lesson, and how many elements each one's checked run got wrong.
struct Schedules {
  Schedules(const std::vector<int>& ks, int chunks, Ordering o) : article(chunks), ordering(o) {
    for (int k : ks) k_streams.emplace_back(k);
  }
  std::vector<MultiStreamPipeline> k_streams;
  TwoStreamPipeline article;
  Ordering ordering;
  std::vector<std::size_t> k_differences;
  std::size_t article_differences = 0;
};

// Each schedule once on poisoned buffers: its output must equal the serial one bit for bit.
void check_schedules(Schedules& s, const Batch& batch, const std::vector<float>& serial, Report& report) {
  NvtxRange range("schedule checks");
  for (MultiStreamPipeline& p : s.k_streams) {
    const std::size_t differ = run_checked(batch, serial, p.origin(), [&] { p.enqueue(batch); });
    s.k_differences.push_back(differ);
    report.check(differ == 0, format("K=%d streams: %zu elements differ from the serial result", p.width(), differ));
  }
  s.article_differences =
      run_checked(batch, serial, s.article.compute(), [&] { s.article.enqueue(batch, s.ordering); });
  report.check(s.article_differences == 0,
               format("two-stream pattern: %zu elements differ from the serial result", s.article_differences));
  const bool identical = s.article_differences == 0 && std::all_of(s.k_differences.begin(), s.k_differences.end(),
                                                                   [](std::size_t d) { return d == 0; });
  report.out() << "check: every schedule below gives the serial result bit for bit: " << (identical ? "yes" : "NO")
               << "\n";
}

// The one table: every K and the article's two streams, each timed, against the serial schedule
// and against both bounds (overlap_bound.h); "bit-identical" is the check run before timing.
void time_schedules(Schedules& s, const Batch& batch, const Stages& stages, CopyEngines engines, Repeats repeats,
                    Report& report) {
  NvtxRange range("schedules");
  Table table({{"schedule", "schedule"}, {"streams", ""}, {"time_ms", "ms", 3, Column::Style::kTiming},
               {"speedup", "vs serial", 2}, {"efficiency", "of bound", 3},
               {"efficiency_stages_alone", "of stages-alone bound", 3}, {"bit_identical", "bit-identical"},
               {"timing_valid", ""}});
  const double bound = duplex_speedup(stages.medians()), textbook = ideal_speedup(stages.medians(), engines);
  auto add = [&](const std::string& name, const Stats& t, std::size_t differ) -> Table::Row& {
    const double speedup = stages.serial.median / t.median;
    return table.add_row().set("schedule", name).set("time_ms", timing(t)).set("speedup", speedup)
        .set("efficiency", overlap_efficiency(speedup, bound))
        .set("efficiency_stages_alone", overlap_efficiency(speedup, textbook)).set("bit_identical", differ == 0);
  };
  for (std::size_t i = 0; i < s.k_streams.size(); ++i) {
    MultiStreamPipeline& p = s.k_streams[i];
    const Stats t = time_on_stream(p.origin(), repeats, [&] { p.enqueue(batch); });
    add(format("K = %d streams", p.width()), t, s.k_differences[i]).set("streams", p.width());
  }
  const Stats two = time_on_stream(s.article.compute(), repeats, [&] { s.article.enqueue(batch, s.ordering); });
  add("article's 2 streams", two, s.article_differences).set("timing_valid", s.ordering == Ordering::kEventWait);

  report.out() << format("== 4. K streams and the article's two streams, each timed %d runs (serial %.3f ms):\n",
                         repeats.timed, stages.serial.median);
  table.print(report.out());
  report.out() << "  (article's 2 streams: copies in on a transfer stream; compute and copies out share the "
                  "compute stream)\n";
  if (s.ordering == Ordering::kNone) {
    report.out() << "  (--drop-wait: that row ran without its waits; its time means nothing)\n";
  }
  nlohmann::json rows = table.json();  // the K rows, then the article's under its own key
  report.json()["two_stream"] = rows.back();
  rows.erase(rows.end() - 1);
  report.json()["pipeline"] = rows;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  use_device(o.common.device);
  Report report("streams_events", o.common.json);
  const CopyEngines engines = report_device(o.common.device, report);
  report.json()["quick"] = o.common.quick;
  report.json()["streams"] = o.streams;
  report.json()["repeats"] = o.repeats;
  BatchBuffers buffers(o.workload);
  Batch& batch = buffers.batch;
  Stream main_stream, second_stream;
  const cudaStream_t s0 = main_stream.get(), s1 = second_stream.get();
  const Repeats repeats{o.common.quick ? 1 : 3, o.repeats};
  std::optional<Calibration> calibration;
  if (batch.iterations == 0) calibration = calibrate(batch, s0, s1, repeats);
  if (calibration) batch.iterations = calibration->iterations;
  report_workload(batch, calibration, report);

  // 1. Check: the serial schedule against the CPU twin; the ordering between the article's two
  // streams; every schedule against the serial one.
  report.out() << "== 1. every schedule checked before it is timed\n";
  const std::vector<float> serial = check_serial(batch, s0, report);
  Schedules schedules(o.streams, batch.chunks, o.drop_wait ? Ordering::kNone : Ordering::kEventWait);
  check_ordering(batch, schedules.article, schedules.ordering, o.producer_delay_us, serial, report);
  check_schedules(schedules, batch, serial, report);

  // 2. The stream is a queue: a launch returns at once, reading the result waits.
  const long long kernel_ns = o.common.quick ? 5'000'000 : 20'000'000;
  report_asynchrony(measure_asynchrony(kernel_ns, o.common.quick ? 2 : 5), kernel_ns, report);

  // 3. Each stage alone, and the bounds; 4. every schedule against them.
  const Stages stages = measure_stages(batch, s0, s1, repeats);
  report_stages(stages, engines, batch.chunks, report);
  time_schedules(schedules, batch, stages, engines, repeats, report);

  // 5. What each way of waiting blocks; 6. the default stream (default_stream.cu).
  const long long short_ns = o.common.quick ? 200'000 : 2'000'000;
  report_waits(measure_waits(short_ns, 4 * short_ns, o.common.quick ? 2 : 5), report);
  report_default_stream(measure_default_stream(kernel_ns / 4), kernel_ns / 4, report);
  return report.finish();
}

}  // namespace
}  // namespace workbook::streams_events

int main(int argc, char** argv) {
  return workbook::guarded_main("streams_events", [&] { return workbook::streams_events::run(argc, argv); });
}

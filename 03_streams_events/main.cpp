// streams_events: the CUDA stream as an ordered queue, overlap of copies with compute, and what
// each way of waiting costs the host. Chapter 03 of the CUDA workbook.
//
//   streams_events                         # the full measurement (a few seconds on an H100/H200)
//   streams_events --streams 1,2,3,4,8     # other stream counts
//   streams_events --trace trace.json      # Chrome trace of one K-stream run and the article's pattern
//   streams_events --drop-wait             # the bug: no cudaStreamWaitEvent, so the check FAILs
//   streams_events --quick --json -        # what the tests run
//
// Order of work: reference and checks first (every schedule against the serial result, bit for
// bit), then timing, then the report.
#include "trace.h"
#include "overlap_bound.h"
#include "pipeline.h"
#include "streams_events.cuh"

#include "cli.h"
#include "compare.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "format.h"
#include "event_timer.h"
#include "gpu_memory.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "report.h"
#include "stream.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace streams_events;
using workbook::Report;
using workbook::Stats;

struct Options {
  workbook::CommonOptions common;
  int chunks = 64;
  long long chunk_elements = 1 << 20;  // 4 MiB of floats per chunk
  int iterations = 0;                  // 0: calibrate so compute takes as long as both copies at once
  std::vector<int> streams{1, 2, 4, 8};
  int repeats = 20;
  std::string trace_path;
  int trace_streams = 4;
  bool drop_wait = false;
  int producer_delay_us = 1000;
};

using workbook::format;

nlohmann::json to_json(const Stats& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

std::string ms_text(const Stats& s) { return format("%8.3f ms (min %.3f, max %.3f)", s.median, s.min, s.max); }

// Parses and checks every flag before any CUDA call, so bad usage exits 2 even without a GPU.
std::optional<int> parse(int argc, char** argv, Options& o) {
  CLI::App app{"Streams and events: asynchrony, copy/compute overlap on K streams, and the cost of waiting"};
  workbook::add_common_options(app, o.common);
  auto* chunks = app.add_option("--chunks", o.chunks, "chunks in the batch (default 64; --quick 4)");
  auto* elements = workbook::add_size_option(app, "--chunk-elements", o.chunk_elements,
                                             "floats per chunk, e.g. 1048576 or 1M (default 1048576; --quick 65536)");
  auto* iterations = app.add_option("--iterations", o.iterations,
                                    "multiply-adds per element in the compute stage; 0 calibrates it so that "
                                    "compute takes as long as both copies running at once (default 0; --quick 64)");
  auto* streams = app.add_option_function<std::string>(
                         "--streams",
                         [&o](const std::string& text) { o.streams = workbook::parse_int_list("--streams", text, 1, 64); },
                         "stream counts K to run, each 1 to 64, e.g. 1,2,4,8")
                      ->type_name("K,K,...");
  auto* repeats = app.add_option("--repeats", o.repeats, "timed repeats of each schedule (default 20; --quick 3)");
  app.add_option("--trace", o.trace_path, "write a Chrome trace (Perfetto, chrome://tracing) to FILE")
      ->type_name("FILE");
  auto* trace_streams = app.add_option("--trace-streams", o.trace_streams, "K of the traced K-stream run (default 4)");
  app.add_flag("--drop-wait", o.drop_wait,
               "the bug: leave out cudaStreamWaitEvent in the two-stream pattern (the check then FAILs)");
  app.add_option("--producer-delay-us", o.producer_delay_us,
                 "how late the slow producer of the ordering check is, per chunk (default 1000)");
  if (auto code = workbook::parse_command_line(app, argc, argv)) return code;

  if (o.common.quick) {  // small sizes, unless the flag was given explicitly
    if (chunks->count() == 0) o.chunks = 4;
    if (elements->count() == 0) o.chunk_elements = 1 << 16;
    if (iterations->count() == 0) o.iterations = 64;
    if (streams->count() == 0) o.streams = {1, 2, 4};
    if (repeats->count() == 0) o.repeats = 3;
  }
  workbook::require_at_least("--chunks", o.chunks, 1);
  workbook::require_at_most("--chunks", o.chunks, 4096);
  workbook::require_at_least("--chunk-elements", o.chunk_elements, 1LL);
  workbook::require_at_most("--chunk-elements", o.chunk_elements, 1LL << 28);
  workbook::require_at_most("--chunks x --chunk-elements", o.chunks * o.chunk_elements, 1LL << 30);
  workbook::require_at_least("--iterations", o.iterations, 0);
  workbook::require_at_most("--iterations", o.iterations, 1000000);
  workbook::require_at_least("--repeats", o.repeats, 1);
  workbook::require_at_most("--repeats", o.repeats, 1000);
  workbook::require_at_least("--trace-streams", o.trace_streams, 1);
  workbook::require_at_most("--trace-streams", o.trace_streams, 64);
  if (app.count("--trace") && o.trace_path.empty()) throw workbook::UsageError("--trace needs a file name");
  if (trace_streams->count() && o.trace_path.empty()) throw workbook::UsageError("--trace-streams needs --trace FILE");
  workbook::require_at_least("--producer-delay-us", o.producer_delay_us, 1);
  workbook::require_at_most("--producer-delay-us", o.producer_delay_us, 1000000);
  return std::nullopt;
}

// Inputs in [-1, 1) from a hash of the index: cheap for 64M elements, and not a pattern that a
// wrong offset could reproduce.
void fill_input(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u + 0x9e3779b9u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    x[i] = static_cast<float>(h >> 8) / 8388608.0f - 1.0f;
  }
}

// Every buffer a schedule writes gets NaN bytes first, so a chunk it skipped or read too early
// cannot pass as the previous run's (identical) answer.
void poison(const Batch& b) {
  const std::size_t bytes = b.total_elements() * sizeof(float);
  CUDA_CHECK(cudaMemset(b.dev_in, 0xFF, bytes));
  CUDA_CHECK(cudaMemset(b.dev_out, 0xFF, bytes));
  std::memset(b.host_out, 0xFF, bytes);
  CUDA_CHECK(cudaDeviceSynchronize());
}

std::size_t count_differences(const float* got, const std::vector<float>& want) {
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
  return differ;
}

// Compute (all chunks, one stream) as a function of iterations is a line, a + b * iterations: two
// points give it, and it gives the iterations that make compute take any wanted time.
class ComputeLine {
 public:
  ComputeLine(Batch b, cudaStream_t stream) {
    const workbook::Repeats few{2, 5};
    auto compute_ms = [&](int iterations) {
      b.iterations = iterations;
      return workbook::time_on_stream(stream, few, [&] {
               for (int c = 0; c < b.chunks; ++c) enqueue_compute(b, c, stream);
             }).median;
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

struct WaitMeasurement {
  const char* call;
  const char* what;
  Stats blocked_us;
};

// Stream A runs a short job, stream B an unrelated long one; the host wants A's result. Each way
// of waiting is timed on the host clock, from just after the launches to its return.
std::vector<WaitMeasurement> measure_waits(long long short_ns, long long long_ns, int repeats) {
  workbook::Stream a, b, consumer;
  workbook::Event a_done;
  enum Method { kDevice, kStream, kEvent, kGpuSide };
  std::vector<WaitMeasurement> out{
      {"cudaDeviceSynchronize", "torch.cuda.synchronize(): waits for every stream, B too", {}},
      {"cudaStreamSynchronize(A)", "stream_a.synchronize(): waits for A only", {}},
      {"cudaEventSynchronize(a_done)", "a_done.synchronize(): waits for A up to the event", {}},
      {"cudaStreamWaitEvent(C, a_done)", "stream_c.wait_event(a_done): the GPU waits, the host goes on", {}}};
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
    out[method].blocked_us = workbook::summarize(us);
  }
  return out;
}

struct Asynchrony {
  Stats launch_us, kernel_ms, read_blocked_ms;
  bool returned_before_done = true;
};

// The article's print(gpu_tensor): the launch returns at once, the read of the result waits.
Asynchrony measure_asynchrony(long long kernel_ns, int repeats) {
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
    const cudaError_t query = cudaEventQuery(stop.get());  // is the GPU done yet?
    const bool running = query == cudaErrorNotReady;
    if (running) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error: clear it (as PyTorch does)
    } else {
      CUDA_CHECK(query);
    }
    const auto t2 = std::chrono::steady_clock::now();
    // What .item() or print() does: copy on the tensor's stream, then wait for that stream.
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

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse(argc, argv, o)) return *code;
  workbook::use_device(o.common.device);

  Report report("streams_events", o.common.json);
  auto& out = report.out();
  nlohmann::json& json = report.json();
  const workbook::Repeats repeats{o.common.quick ? 1 : 3, o.repeats};

  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, o.common.device));
  const CopyEngines engines = copy_engines_from_count(prop.asyncEngineCount);
  out << "device " << o.common.device << ": " << prop.name << ", " << prop.asyncEngineCount
      << " copy engine(s), concurrent kernels: " << (prop.concurrentKernels ? "yes" : "no") << "\n";
  json["device"] = prop.name;
  json["async_engine_count"] = prop.asyncEngineCount;

  // ---- Buffers: the whole batch pinned on the host and resident on the device.
  const std::size_t n = static_cast<std::size_t>(o.chunks) * static_cast<std::size_t>(o.chunk_elements);
  workbook::require_gpu_memory("--chunks " + std::to_string(o.chunks) + " x --chunk-elements " +
                                   std::to_string(o.chunk_elements),
                               workbook::ByteCount().add(static_cast<std::int64_t>(n), sizeof(float), 2));
  workbook::PinnedBuffer<float> h_in(n), h_out(n);
  workbook::DeviceBuffer<float> d_in(n), d_out(n);
  fill_input(h_in.data(), n);
  Batch batch{h_in.data(), h_out.data(), d_in.data(), d_out.data(),
              static_cast<std::size_t>(o.chunk_elements), o.chunks, o.iterations};
  const double total_bytes = static_cast<double>(n * sizeof(float));
  workbook::Stream main_stream;
  const cudaStream_t s0 = main_stream.get();

  // ---- Calibrate the compute stage against the copies (all chunks, alone and both directions at once).
  auto time_copy_in = [&] {
    return workbook::time_on_stream(s0, repeats, [&] { for (int c = 0; c < batch.chunks; ++c) enqueue_copy_in(batch, c, s0); });
  };
  auto time_copy_out = [&] {
    return workbook::time_on_stream(s0, repeats, [&] { for (int c = 0; c < batch.chunks; ++c) enqueue_copy_out(batch, c, s0); });
  };
  // Every H2D on one stream and every D2H on another, at once: what the link gives both directions.
  workbook::Stream second_stream;
  ForkJoin pair(2);
  const std::vector<cudaStream_t> both{s0, second_stream.get()};
  auto time_copies_together = [&] {
    return workbook::time_on_stream(s0, repeats, [&] {
      pair.fork(both);
      for (int c = 0; c < batch.chunks; ++c) enqueue_copy_in(batch, c, both[0]);
      for (int c = 0; c < batch.chunks; ++c) enqueue_copy_out(batch, c, both[1]);
      pair.join(both);
    });
  };

  // The target is the copies' floor, both directions at once, not the slower copy alone: with
  // compute only as long as one copy, the copies (slowed by sharing the link) would be the real
  // bottleneck and the bound from the stages alone could not be reached.
  const bool calibrated = o.iterations == 0;
  StageTimes calibration{};
  int iterations_for_slower_copy = 0;
  if (calibrated) {
    workbook::NvtxRange range("calibrate");
    batch.iterations = 64;
    enqueue_serial(batch, s0);  // writes d_out, so that timing the copy out reads initialised memory
    main_stream.synchronize();
    calibration = {time_copy_in().median, 0.0, time_copy_out().median, time_copies_together().median};
    const ComputeLine line(batch, s0);
    batch.iterations = line.iterations_for(copy_floor_ms(calibration));
    iterations_for_slower_copy = line.iterations_for(std::max(calibration.copy_in_ms, calibration.copy_out_ms));
  }
  out << format("workload: %d chunks x %lld floats (%.1f MiB each, %.0f MiB in all), pinned host memory\n",
                o.chunks, o.chunk_elements, batch.chunk_bytes() / 1048576.0, total_bytes / 1048576.0);
  out << format("compute stage: %d dependent multiply-adds per element%s\n", batch.iterations,
                calibrated ? " (calibrated: as long as both copies at once)" : "");
  json["workload"] = {{"chunks", o.chunks}, {"chunk_elements", o.chunk_elements},
                      {"chunk_bytes", batch.chunk_bytes()}, {"total_bytes", total_bytes},
                      {"iterations", batch.iterations}, {"iterations_calibrated", calibrated}};
  if (calibrated) {
    out << format("  (calibration: H2D %.3f ms and D2H %.3f ms alone, %.3f ms at once; matching the slower "
                  "copy alone would take %d)\n",
                  calibration.copy_in_ms, calibration.copy_out_ms, calibration.copies_together_ms,
                  iterations_for_slower_copy);
    json["workload"]["calibration"] = {{"target", "both copies at once"},
                                       {"target_ms", copy_floor_ms(calibration)},
                                       {"h2d_ms", calibration.copy_in_ms},
                                       {"d2h_ms", calibration.copy_out_ms},
                                       {"copies_together_ms", calibration.copies_together_ms},
                                       {"iterations_for_slower_copy", iterations_for_slower_copy}};
  }

  // ---- Reference: the CPU twin on a sample (every chunk's first and last element and a stride),
  // against the serial GPU schedule, whose full output then is the answer every schedule must match.
  std::vector<float> serial_result(n);
  {
    workbook::NvtxRange range("reference and checks");
    poison(batch);
    enqueue_serial(batch, s0);
    main_stream.synchronize();
    std::copy(h_out.data(), h_out.data() + n, serial_result.begin());
    std::vector<std::size_t> sample;
    const std::size_t stride = std::max<std::size_t>(1, n / 65536);
    for (std::size_t i = 0; i < n; i += stride) sample.push_back(i);
    for (int c = 0; c < o.chunks; ++c) {
      sample.push_back(batch.offset(c));
      sample.push_back(batch.offset(c) + batch.chunk_elements - 1);
    }
    std::vector<float> got, want;
    for (std::size_t i : sample) {
      got.push_back(serial_result[i]);
      want.push_back(transform_cpu(h_in.data()[i], batch.iterations));
    }
    const workbook::Comparison cmp = workbook::compare(got, want, workbook::Tolerance{1e-6, 1e-6});
    out << "check: serial GPU result vs CPU twin on " << cmp.checked << " sampled elements: "
        << (cmp.ok() ? "match" : "MISMATCH") << format(" (worst |error| %g)\n", cmp.worst_error);
    if (!cmp.ok()) out << cmp.summary();
    report.check(cmp.ok(), "serial GPU result differs from the CPU twin");
    json["reference_check"] = {{"sampled", cmp.checked}, {"mismatches", cmp.mismatches}, {"worst_error", cmp.worst_error}};
  }

  // Each schedule once on poisoned buffers: its output must equal the serial one bit for bit.
  std::vector<MultiStreamPipeline> pipelines;
  for (int k : o.streams) pipelines.emplace_back(k);
  std::vector<std::size_t> pipeline_differences;
  for (MultiStreamPipeline& p : pipelines) {
    poison(batch);
    p.enqueue(batch);
    CUDA_CHECK(cudaStreamSynchronize(p.origin()));
    pipeline_differences.push_back(count_differences(h_out.data(), serial_result));
    report.check(pipeline_differences.back() == 0,
                 format("K=%d streams: %zu elements differ from the serial result", p.width(), pipeline_differences.back()));
  }
  TwoStreamPipeline article(o.chunks);
  const Ordering ordering = o.drop_wait ? Ordering::kNone : Ordering::kEventWait;

  // The ordering check: a late producer and a poisoned destination make a missing wait show
  // every time, in every element, instead of now and then (with repeated identical inputs, a
  // chunk read too early would even hold the right answer from the previous run).
  Batch few = batch;
  few.chunks = std::min(batch.chunks, 8);
  poison(batch);
  article.enqueue(few, ordering, 1000LL * o.producer_delay_us);
  CUDA_CHECK(cudaStreamSynchronize(article.compute()));
  const std::vector<float> few_want(serial_result.begin(), serial_result.begin() + static_cast<long>(few.total_elements()));
  const std::vector<float> few_got(h_out.data(), h_out.data() + few.total_elements());
  const std::size_t stale = count_differences(few_got.data(), few_want);
  report.check(stale == 0, format("%zu of %zu elements were read before their copy landed (no event wait)", stale,
                                  few_want.size()));

  poison(batch);
  article.enqueue(batch, ordering);
  CUDA_CHECK(cudaStreamSynchronize(article.compute()));
  const std::size_t article_differences = count_differences(h_out.data(), serial_result);
  report.check(article_differences == 0,
               format("two-stream pattern: %zu elements differ from the serial result", article_differences));
  const bool all_identical =
      article_differences == 0 &&
      std::all_of(pipeline_differences.begin(), pipeline_differences.end(), [](std::size_t d) { return d == 0; });
  out << "check: every schedule below gives the serial result bit for bit: " << (all_identical ? "yes" : "NO") << "\n\n";

  // ---- 1. Asynchrony.
  {
    workbook::NvtxRange range("asynchrony");
    const long long kernel_ns = o.common.quick ? 5'000'000 : 20'000'000;
    const Asynchrony a = measure_asynchrony(kernel_ns, o.common.quick ? 2 : 5);
    out << format("asynchrony: a %.0f ms kernel\n", kernel_ns / 1e6);
    out << format("  launch returned to the host after  %9.1f us   (GPU still busy: %s)\n", a.launch_us.median,
                  a.returned_before_done ? "yes" : "no");
    out << format("  reading its result blocked the host %8.3f ms   (kernel ran %.3f ms)\n\n",
                  a.read_blocked_ms.median, a.kernel_ms.median);
    json["asynchrony"] = {{"kernel_ms", to_json(a.kernel_ms)}, {"launch_us", to_json(a.launch_us)},
                          {"read_blocked_ms", to_json(a.read_blocked_ms)},
                          {"returned_before_done", a.returned_before_done}};
  }

  // ---- 2. The stages alone, the bound, and the K-stream pipeline.
  workbook::NvtxRange timing_range("pipeline timing");
  const Stats copy_in = time_copy_in();
  const Stats compute = workbook::time_on_stream(s0, repeats, [&] {
    for (int c = 0; c < batch.chunks; ++c) enqueue_compute(batch, c, s0);
  });
  const Stats copy_out = time_copy_out();
  const Stats copies_together = time_copies_together();
  const Stats serial = workbook::time_on_stream(s0, repeats, [&] { enqueue_serial(batch, s0); });

  const StageTimes alone{copy_in.median, compute.median, copy_out.median, copies_together.median};
  const double textbook = ideal_speedup(alone, engines);
  const double bound = duplex_speedup(alone);
  const double gflops = 2.0 * batch.iterations * static_cast<double>(n) / (compute.median * 1e6);
  out << "stages, each alone over the whole batch:\n";
  out << "  H2D copy     " << ms_text(copy_in) << format("  %6.1f GB/s\n", workbook::gigabytes_per_second(total_bytes, copy_in.median));
  out << "  compute      " << ms_text(compute) << format("  %6.0f GFLOP/s\n", gflops);
  out << "  D2H copy     " << ms_text(copy_out) << format("  %6.1f GB/s\n", workbook::gigabytes_per_second(total_bytes, copy_out.median));
  out << "  H2D and D2H at once " << ms_text(copies_together) << "\n";
  out << "  serial (one stream, stage after stage) " << ms_text(serial) << "\n";
  out << format("bound from the stages alone: (%.3f + %.3f + %.3f) / %.3f = %.2fx  (%s)\n", alone.copy_in_ms,
                alone.compute_ms, alone.copy_out_ms, ideal_time_ms(alone, engines), textbook,
                engines == CopyEngines::kOnePerDirection ? "a copy engine per direction: the busiest stage"
                                                         : "one copy engine: both copies are one stage");
  out << format("bound with both copies measured at once: %.3f / max(%.3f, %.3f) = %.2fx  <- efficiency below\n",
                alone.sum_ms(), alone.compute_ms, alone.copies_together_ms, bound);
  out << format("  (%d chunks also cost a fill and a drain: at best %.2fx)\n\n", o.chunks,
                alone.sum_ms() / pipeline_floor_ms(alone, o.chunks));
  json["stages"] = {{"h2d_ms", to_json(copy_in)}, {"compute_ms", to_json(compute)}, {"d2h_ms", to_json(copy_out)},
                    {"h2d_gbps", workbook::gigabytes_per_second(total_bytes, copy_in.median)},
                    {"d2h_gbps", workbook::gigabytes_per_second(total_bytes, copy_out.median)},
                    {"compute_gflops", gflops}, {"copies_both_directions_ms", to_json(copies_together)}};
  json["serial_ms"] = to_json(serial);
  json["bound"] = {{"copy_engines_per_direction", engines == CopyEngines::kOnePerDirection},
                   {"stages_alone_ms", ideal_time_ms(alone, engines)}, {"stages_alone_speedup", textbook},
                   {"copies_together_ms", duplex_time_ms(alone)}, {"copies_together_speedup", bound},
                   {"fill_drain_ms", pipeline_floor_ms(alone, o.chunks)},
                   {"fill_drain_speedup", alone.sum_ms() / pipeline_floor_ms(alone, o.chunks)}};

  out << "schedule                  time        speedup  efficiency  (vs stages-alone bound)  bit-identical\n";
  out << format("  serial, one stream %8.3f ms      1.00x\n", serial.median);
  json["pipeline"] = nlohmann::json::array();
  auto row = [&](const char* name, const Stats& t, bool identical) {
    const double speedup = serial.median / t.median;
    out << format("  %-18s %8.3f ms  %7.2fx  %9.1f%%  %14.1f%%              %s\n", name, t.median, speedup,
                  100.0 * overlap_efficiency(speedup, bound), 100.0 * overlap_efficiency(speedup, textbook),
                  identical ? "yes" : "NO");
    return nlohmann::json{{"time_ms", to_json(t)}, {"speedup", speedup},
                          {"efficiency", overlap_efficiency(speedup, bound)},
                          {"efficiency_stages_alone", overlap_efficiency(speedup, textbook)},
                          {"bit_identical", identical}};
  };
  for (std::size_t i = 0; i < pipelines.size(); ++i) {
    MultiStreamPipeline& p = pipelines[i];
    const Stats t = workbook::time_on_stream(p.origin(), repeats, [&] { p.enqueue(batch); });
    nlohmann::json entry = row(format("K = %d streams", p.width()).c_str(), t, pipeline_differences[i] == 0);
    entry["streams"] = p.width();
    json["pipeline"].push_back(entry);
  }

  // ---- 3. The article's two streams, and the missing wait.
  const Stats two = workbook::time_on_stream(article.compute(), repeats, [&] { article.enqueue(batch, ordering); });
  json["two_stream"] = row("article's 2 streams", two, article_differences == 0);
  json["two_stream"]["timing_valid"] = !o.drop_wait;
  out << "  (article's 2 streams: copies in on a transfer stream; compute and copies out share the compute stream)\n";
  if (o.drop_wait) out << "  (--drop-wait: that row ran without its waits; its time means nothing)\n";
  out << "\n";

  out << format("ordering check: producer %d us late per chunk, destination poisoned with NaN, %s\n",
                o.producer_delay_us, o.drop_wait ? "cudaStreamWaitEvent DROPPED (--drop-wait)"
                                                 : "compute stream waits on each copy's event");
  out << format("  %zu of %zu elements were read before their copy landed\n", stale, few_want.size());
  for (int c = 0; c < std::min(few.chunks, 3); ++c) {
    const std::size_t i = few.offset(c);
    out << format("  chunk %d, element 0: got %g, want %g\n", c, few_got[i], few_want[i]);
  }
  out << "\n";
  json["ordering_check"] = {{"waits_dropped", o.drop_wait}, {"producer_delay_us", o.producer_delay_us},
                            {"checked_elements", few_want.size()}, {"stale_elements", stale}};

  // ---- 4. What each way of waiting costs the host.
  {
    workbook::NvtxRange range("waits");
    const long long short_ns = o.common.quick ? 200'000 : 2'000'000;
    const long long long_ns = 4 * short_ns;
    const std::vector<WaitMeasurement> waits = measure_waits(short_ns, long_ns, o.common.quick ? 2 : 5);
    out << format("waiting for stream A's %.1f ms job while stream B runs a %.1f ms one (host blocked, median):\n",
                  short_ns / 1e6, long_ns / 1e6);
    json["waits"] = {{"short_job_ms", short_ns / 1e6}, {"long_job_ms", long_ns / 1e6}, {"methods", nlohmann::json::array()}};
    for (const WaitMeasurement& w : waits) {
      out << format("  %-31s %10.1f us   %s\n", w.call, w.blocked_us.median, w.what);
      json["waits"]["methods"].push_back({{"call", w.call}, {"blocked_us", to_json(w.blocked_us)}});
    }
    out << "\n";
  }

  // ---- 5. The timeline, from event timestamps.
  if (!o.trace_path.empty()) {
    workbook::NvtxRange range("trace");
    MultiStreamPipeline traced(o.trace_streams);
    std::vector<std::string> tracks;
    for (int k = 0; k < o.trace_streams; ++k) tracks.push_back(format("K=%d: stream %d", o.trace_streams, k));
    tracks.push_back("two streams: compute");
    tracks.push_back("two streams: transfer");
    TraceRecorder recorder(tracks);
    traced.enqueue(batch, &recorder, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    article.enqueue(batch, ordering, 0, &recorder, o.trace_streams);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<TraceOp> ops = recorder.ops();
    write_chrome_trace(o.trace_path, ops, recorder.tracks());
    out << "trace: " << ops.size() << " operations on " << tracks.size() << " tracks written to " << o.trace_path << "\n";
    json["trace"] = {{"path", o.trace_path}, {"operations", ops.size()}, {"tracks", tracks.size()}};
  }
  return report.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("streams_events", [&] { return run(argc, argv); });
}

// bench_streams.cpp: chapter 03's measuring harness, beside the lesson (streams_events.cu), whose
// kernels and schedules it links. It records what the lesson leaves out: the timeline. The
// K-stream pipeline and the article's two streams run once more with a pair of CUDA events around
// every copy and kernel; the result is one table (per stream: operations, busy time, first start
// and last end) and, with --trace FILE, a Chrome trace (Perfetto, chrome://tracing; plot_trace.py
// draws it as a PNG).
//
//   streams_events_bench --trace trace.json                        # K = 4 and the article's two streams
//   streams_events_bench --trace t.json --trace-streams 3 --iterations 2003   # the lesson run's workload
//
// A bar starts when its stream reaches the operation, not when a copy engine or the SMs take it
// up, and the extra events make the traced run a little slower than the lesson's timed one. The
// traced runs are checked first, bit for bit against the serial schedule, as in the lesson.
#include "streams_events.h"
#include "results.h"
#include "workload.h"

#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "report.h"
#include "table.h"
#include "trace.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace workbook::streams_events {
namespace {

// MultiStreamPipeline::enqueue with a pair of events around each operation: chunk c on stream c % K,
// stream k on track k.
void traced_multi_stream(const Batch& b, const std::vector<cudaStream_t>& streams, TraceRecorder& trace) {
  ForkJoin fork_join(streams.size());
  trace.mark_origin(streams.front());  // before the fork, so every stream follows it
  fork_join.fork(streams);
  for (int c = 0; c < b.chunks; ++c) {
    const int k = c % static_cast<int>(streams.size());
    const cudaStream_t s = streams[k];
    const std::string n = " " + std::to_string(c);
    trace.op(s, k, "H2D" + n, "copy_in", [&] { enqueue_copy_in(b, c, s); });
    trace.op(s, k, "compute" + n, "compute", [&] { enqueue_compute(b, c, s); });
    trace.op(s, k, "D2H" + n, "copy_out", [&] { enqueue_copy_out(b, c, s); });
  }
  fork_join.join(streams);
}

// TwoStreamPipeline::enqueue (with its event wait) traced: the compute stream on track
// `first_track`, the transfer stream on the next one.
void traced_two_stream(const Batch& b, cudaStream_t compute, cudaStream_t transfer, TraceRecorder& trace,
                       int first_track) {
  const std::vector<cudaStream_t> both{compute, transfer};
  ForkJoin fork_join(2);
  std::vector<Event> copied(static_cast<std::size_t>(b.chunks));
  trace.mark_origin(compute);  // kept from the first traced schedule, when there was one
  fork_join.fork(both);
  for (int c = 0; c < b.chunks; ++c) {
    const std::string n = " " + std::to_string(c);
    trace.op(transfer, first_track + 1, "H2D" + n, "copy_in", [&] { enqueue_copy_in(b, c, transfer); });
    copied[c].record(transfer);
    CUDA_CHECK(cudaStreamWaitEvent(compute, copied[c].get(), 0));
    trace.op(compute, first_track, "compute" + n, "compute", [&] { enqueue_compute(b, c, compute); });
    trace.op(compute, first_track, "D2H" + n, "copy_out", [&] { enqueue_copy_out(b, c, compute); });
  }
  fork_join.join(both);
  CUDA_CHECK(cudaStreamSynchronize(compute));  // before the events in `copied` go
}

// Both schedules traced on one recorder (K streams on tracks 0..K-1, the article's two streams on
// K and K + 1), each checked bit for bit against the serial schedule's output.
std::vector<TraceOp> record(const Batch& batch, int k_streams, TraceRecorder& trace, Report& report) {
  NvtxRange range("trace");
  Stream reference;
  poison(batch);
  enqueue_serial(batch, reference.get());  // untraced
  reference.synchronize();
  const std::vector<float> serial(batch.host_out, batch.host_out + batch.total_elements());
  auto check = [&](const char* what) {
    const std::size_t differ = count_differences(batch.host_out, serial.data(), serial.size());
    report.check(differ == 0, format("traced %s: %zu elements differ from the serial result", what, differ));
  };
  std::vector<Stream> streams(static_cast<std::size_t>(k_streams));
  std::vector<cudaStream_t> handles;
  for (const Stream& s : streams) handles.push_back(s.get());
  poison(batch);
  traced_multi_stream(batch, handles, trace);
  CUDA_CHECK(cudaDeviceSynchronize());
  check("K-stream run");
  Stream compute, transfer;
  poison(batch);
  traced_two_stream(batch, compute.get(), transfer.get(), trace, k_streams);
  check("two-stream run");
  return trace.ops();
}

// One row per track: operations, busy time, and the first start and last end, in ms after the
// first operation of the track's group ("K=4", "two streams": each schedule has its own clock).
void summarize(const std::vector<TraceOp>& ops, const std::vector<std::string>& tracks, Report& report) {
  auto group = [&](int track) { return tracks[track].substr(0, tracks[track].find(':')); };
  std::map<std::string, double> group_start;
  for (const TraceOp& op : ops) {
    auto [it, added] = group_start.emplace(group(op.track), op.start_us);
    if (!added) it->second = std::min(it->second, op.start_us);
  }
  Table table({{"track", "stream"}, {"operations", "ops"}, {"busy_ms", "busy ms", 3},
               {"first_start_ms", "first start ms", 3}, {"last_end_ms", "last end ms", 3}});
  for (int t = 0; t < static_cast<int>(tracks.size()); ++t) {
    int count = 0;
    double busy = 0.0, first = 1e300, last = 0.0;
    for (const TraceOp& op : ops) {
      if (op.track != t) continue;
      ++count;
      busy += op.duration_us;
      first = std::min(first, op.start_us);
      last = std::max(last, op.start_us + op.duration_us);
    }
    if (count == 0) continue;
    const double zero = group_start[group(t)];
    table.add_row().set("track", tracks[t]).set("operations", count).set("busy_ms", busy / 1e3)
        .set("first_start_ms", (first - zero) / 1e3).set("last_end_ms", (last - zero) / 1e3);
  }
  report.out() << "timeline (CUDA event timestamps, a pair around each operation):\n";
  table.print(report.out());
  report.json()["tracks"] = table.json();
}

struct Options {
  CommonOptions common;
  WorkloadOptions workload;  // --chunks, --chunk-elements, --iterations (workload.cpp, shared with the lesson)
  std::string trace_path;
  int trace_streams = 4;
};

// Every flag is checked before any CUDA call, so bad usage exits 2 even without a GPU.
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 03's bench: the timeline of the K-stream pipeline and the article's two streams"};
  add_common_options(app, o.common);
  add_workload_options(app, o.workload);
  app.add_option("--trace", o.trace_path, "write a Chrome trace (Perfetto, chrome://tracing) to FILE")
      ->type_name("FILE");
  app.add_option("--trace-streams", o.trace_streams, "K of the traced K-stream run (default 4)");
  if (auto code = parse_command_line(app, argc, argv)) return code;
  finish_workload_options(app, o.common.quick, o.workload);
  require_at_least("--trace-streams", o.trace_streams, 1);
  require_at_most("--trace-streams", o.trace_streams, 64);
  if (app.count("--trace")) require_output_file("--trace", o.trace_path, ".json");
  require_distinct_outputs("--trace", o.trace_path, "--json", o.common.json.value_or(""));
  return std::nullopt;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  const CommonOptions& common = o.common;
  const int trace_streams = o.trace_streams;
  const std::string& trace_path = o.trace_path;
  use_device(common.device);
  Report report("streams_events_bench", common.json);
  report_device(common.device, report);
  report.json()["quick"] = common.quick;
  report.json()["trace_streams"] = trace_streams;
  BatchBuffers buffers(o.workload);
  Batch& batch = buffers.batch;
  std::optional<Calibration> calibration;
  if (batch.iterations == 0) {  // as the lesson does, so that both run the same workload
    Stream s0, s1;
    calibration = calibrate(batch, s0.get(), s1.get(), Repeats{common.quick ? 1 : 3, 20});
    batch.iterations = calibration->iterations;
  }
  report_workload(batch, calibration, report);

  std::vector<std::string> tracks;
  for (int k = 0; k < trace_streams; ++k) tracks.push_back(format("K=%d: stream %d", trace_streams, k));
  tracks.push_back("two streams: compute");
  tracks.push_back("two streams: transfer");
  TraceRecorder trace(tracks);
  const std::vector<TraceOp> ops = record(batch, trace_streams, trace, report);
  summarize(ops, tracks, report);
  if (!trace_path.empty()) {
    write_chrome_trace(trace_path, ops, tracks);
    report.out() << "trace: " << ops.size() << " operations on " << tracks.size() << " tracks written to " << trace_path
                 << "\n";
    report.json()["trace"] = {{"path", trace_path}, {"operations", ops.size()}, {"tracks", tracks.size()}};
  }
  return report.finish();
}

}  // namespace
}  // namespace workbook::streams_events

int main(int argc, char** argv) {
  return workbook::guarded_main("streams_events_bench", [&] { return workbook::streams_events::run(argc, argv); });
}

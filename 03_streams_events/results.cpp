// results.cpp: the printed lines and the JSON of chapter 03's results (see results.h).
#include "results.h"

#include "cuda_check.h"
#include "format.h"
#include "table.h"

#include <algorithm>
#include <ostream>

namespace workbook::streams_events {

using workbook::format;
using workbook::Stats;

CopyEngines report_device(int device, workbook::Report& report) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  report.out() << "device " << device << ": " << prop.name << ", " << prop.asyncEngineCount
               << " copy engine(s), concurrent kernels: " << (prop.concurrentKernels ? "yes" : "no") << "\n";
  report.json()["device"] = prop.name;
  report.json()["async_engine_count"] = prop.asyncEngineCount;
  return copy_engines_from_count(prop.asyncEngineCount);
}

void report_workload(const Batch& b, const std::optional<Calibration>& c, workbook::Report& report) {
  const double total_bytes = static_cast<double>(b.total_elements() * sizeof(float));
  std::ostream& out = report.out();
  out << format("workload: %d chunks x %zu floats (%.1f MiB each, %.0f MiB in all), pinned host memory\n", b.chunks,
                b.chunk_elements, b.chunk_bytes() / 1048576.0, total_bytes / 1048576.0);
  out << format("compute stage: %d dependent multiply-adds per element%s\n", b.iterations,
                c ? " (calibrated: as long as both copies at once)" : "");
  nlohmann::json& w = report.json()["workload"];
  w = {{"chunks", b.chunks}, {"chunk_elements", b.chunk_elements}, {"chunk_bytes", b.chunk_bytes()},
       {"total_bytes", total_bytes}, {"iterations", b.iterations}, {"iterations_calibrated", c.has_value()}};
  if (!c) return;
  out << format("  (calibration: H2D %.3f ms and D2H %.3f ms alone, %.3f ms at once; matching the slower copy "
                "alone would take %d)\n",
                c->copies.copy_in_ms, c->copies.copy_out_ms, c->copies.copies_together_ms,
                c->iterations_for_slower_copy);
  w["calibration"] = {{"target", "both copies at once"},
                      {"target_ms", c->target_ms},
                      {"h2d_ms", timing(c->copy_in)},
                      {"d2h_ms", timing(c->copy_out)},
                      {"copies_together_ms", timing(c->copies_together)},
                      {"iterations_for_slower_copy", c->iterations_for_slower_copy}};
}

void report_stages(const Stages& t, CopyEngines engines, int chunks, workbook::Report& report) {
  auto ms = [](const Stats& s) { return format("%8.3f ms (min %.3f, max %.3f)", s.median, s.min, s.max); };
  const StageTimes alone = t.medians();
  std::ostream& out = report.out();
  out << "== 3. the stages, each alone over the whole batch, and the bounds\n";
  out << "  H2D copy     " << ms(t.copy_in) << format("  %6.1f GB/s\n", t.h2d_gbps);
  out << "  compute      " << ms(t.compute) << format("  %6.0f GFLOP/s\n", t.compute_gflops);
  out << "  D2H copy     " << ms(t.copy_out) << format("  %6.1f GB/s\n", t.d2h_gbps);
  out << "  H2D and D2H at once " << ms(t.copies_together) << "\n";
  out << "  serial (one stream, stage after stage) " << ms(t.serial) << "\n";
  out << format("bound from the stages alone: (%.3f + %.3f + %.3f) / %.3f = %.2fx  (%s)\n", alone.copy_in_ms,
                alone.compute_ms, alone.copy_out_ms, ideal_time_ms(alone, engines), ideal_speedup(alone, engines),
                engines == CopyEngines::kOnePerDirection ? "a copy engine per direction: the busiest stage"
                                                         : "one copy engine: both copies are one stage");
  out << format("bound with both copies measured at once: %.3f / max(%.3f, %.3f) = %.2fx  <- efficiency below\n",
                alone.sum_ms(), alone.compute_ms, alone.copies_together_ms, duplex_speedup(alone));
  out << format("  (%d chunks also cost a fill and a drain: at best %.2fx)\n\n", chunks,
                alone.sum_ms() / pipeline_floor_ms(alone, chunks));
  nlohmann::json& j = report.json();
  j["stages"] = {{"h2d_ms", timing(t.copy_in)}, {"compute_ms", timing(t.compute)}, {"d2h_ms", timing(t.copy_out)},
                 {"h2d_gbps", t.h2d_gbps}, {"d2h_gbps", t.d2h_gbps}, {"compute_gflops", t.compute_gflops},
                 {"copies_both_directions_ms", timing(t.copies_together)}};
  j["serial_ms"] = timing(t.serial);
  j["bound"] = {{"copy_engines_per_direction", engines == CopyEngines::kOnePerDirection},
                {"stages_alone_ms", ideal_time_ms(alone, engines)},
                {"stages_alone_speedup", ideal_speedup(alone, engines)},
                {"copies_together_ms", duplex_time_ms(alone)},
                {"copies_together_speedup", duplex_speedup(alone)},
                {"fill_drain_ms", pipeline_floor_ms(alone, chunks)},
                {"fill_drain_speedup", alone.sum_ms() / pipeline_floor_ms(alone, chunks)}};
}

void report_reference_check(const workbook::Comparison& c, workbook::Report& report) {
  report.out() << "check: serial GPU result vs CPU twin on " << c.checked << " sampled elements: "
               << (c.ok() ? "match" : "MISMATCH") << format(" (worst |error| %g)\n", c.worst_error);
  if (!c.ok()) report.out() << c.summary();
  report.json()["reference_check"] = {
      {"sampled", c.checked}, {"mismatches", c.mismatches}, {"worst_error", c.worst_error}};
}

void report_ordering(const OrderingCheck& o, const Batch& few, const float* want, workbook::Report& report) {
  std::ostream& out = report.out();
  out << format("ordering check: producer %d us late per chunk, destination poisoned with NaN, %s\n",
                o.producer_delay_us,
                o.waits_dropped ? "cudaStreamWaitEvent DROPPED (--drop-wait)"
                                : "compute stream waits on each copy's event");
  out << format("  %zu of %zu elements were read before their copy landed\n", o.stale_elements, o.checked_elements);
  for (int c = 0; c < std::min(few.chunks, 3); ++c) {
    out << format("  chunk %d, element 0: got %g, want %g\n", c, few.host_out[few.offset(c)], want[few.offset(c)]);
  }
  report.json()["ordering_check"] = {{"waits_dropped", o.waits_dropped}, {"producer_delay_us", o.producer_delay_us},
                                     {"checked_elements", o.checked_elements}, {"stale_elements", o.stale_elements}};
}

void report_asynchrony(const Asynchrony& a, long long kernel_ns, workbook::Report& report) {
  std::ostream& out = report.out();
  out << format("\n== 2. the stream is a queue: a %.0f ms kernel\n", kernel_ns / 1e6);
  out << format("  launch returned to the host after  %9.1f us   (GPU still busy: %s)\n", a.launch_us.median,
                a.returned_before_done ? "yes" : "no");
  out << format("  reading its result blocked the host %8.3f ms   (kernel ran %.3f ms)\n\n", a.read_blocked_ms.median,
                a.kernel_ms.median);
  report.json()["asynchrony"] = {{"kernel_ms", timing(a.kernel_ms)}, {"launch_us", timing(a.launch_us)},
                                 {"read_blocked_ms", timing(a.read_blocked_ms)},
                                 {"returned_before_done", a.returned_before_done}};
}

void report_waits(const Waits& w, workbook::Report& report) {
  report.out() << format("\n== 5. waiting for stream A's %.1f ms job while stream B runs a %.1f ms one (host blocked, "
                         "median):\n", w.short_job_ms, w.long_job_ms);
  nlohmann::json methods = nlohmann::json::array();
  for (const Wait& m : w.methods) {
    report.out() << format("  %-31s %10.1f us   %s\n", m.call, m.blocked_us.median, m.what);
    methods.push_back({{"call", m.call}, {"blocked_us", timing(m.blocked_us)}});
  }
  report.json()["waits"] = {{"short_job_ms", w.short_job_ms}, {"long_job_ms", w.long_job_ms}, {"methods", methods}};
}

void report_default_stream(const std::vector<DefaultStreamCase>& cases, long long kernel_ns, workbook::Report& report) {
  workbook::Table table({{"case", "kernel A on, then kernel B on"}, {"waited", "B waited for A"},
               {"b_start_after_a_start_us", "B started after A (us)", 0, workbook::Column::Style::kTiming}});
  for (const DefaultStreamCase& c : cases) {
    table.add_row().set("case", c.name).set("waited", c.waited)
        .set("b_start_after_a_start_us", timing(summarize({c.b_start_after_a_start_us})));
  }
  report.out() << "\n== 6. the default stream: two " << kernel_ns / 1'000'000.0 << " ms kernels, A then B, stamped on the GPU:\n";
  table.print(report.out());
  report.json()["default_stream"] = table.json();
  // Only the first is a guarantee; whether the others overlap depends on free SMs (and a sanitizer
  // may run kernels one at a time).
  report.check(cases.at(0).waited, "a kernel on the legacy default stream did not wait for a blocking stream's kernel");
}


}  // namespace workbook::streams_events

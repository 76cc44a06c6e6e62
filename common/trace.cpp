// trace.cpp: the recorded events as times, the Chrome trace event format (as much of it as a
// timeline of streams needs), and the shares of a trace's time that copies and compute were busy.
#include "trace.h"

#include "output_file.h"
#include "provenance.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace workbook {

std::vector<TraceOp> TraceRecorder::ops() const {
  std::vector<TraceOp> out;
  out.reserve(pending_.size());
  for (const Pending& p : pending_) {
    p.stop.synchronize();
    const double start_us = 1000.0 * elapsed_ms(origin_, p.start);
    const double stop_us = 1000.0 * elapsed_ms(origin_, p.stop);
    out.push_back({p.name, p.category, p.track, start_us, stop_us - start_us});
  }
  return out;
}

namespace {

using Spans = std::vector<std::pair<double, double>>;  // [start, end) in microseconds

// The union of the spans of one category, as sorted spans that do not overlap.
Spans merged(const std::vector<TraceOp>& ops, const std::string& category) {
  Spans spans;
  for (const TraceOp& op : ops) {
    if (op.category == category) spans.emplace_back(op.start_us, op.start_us + std::max(0.0, op.duration_us));
  }
  std::sort(spans.begin(), spans.end());
  Spans out;
  for (const auto& s : spans) {
    if (!out.empty() && s.first <= out.back().second) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

double length(const Spans& spans) {
  double sum = 0.0;
  for (const auto& [start, end] : spans) sum += end - start;
  return sum;
}

// The time two unions share: both lists are sorted and each is free of overlaps, so one pass
// over the two together, always moving on from the span that ends first.
double shared(const Spans& a, const Spans& b) {
  double sum = 0.0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    sum += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return sum;
}

}  // namespace

OverlapShares overlap_shares(const std::vector<TraceOp>& ops, const std::string& copy_category,
                             const std::string& compute_category) {
  const Spans copies = merged(ops, copy_category);
  const Spans compute = merged(ops, compute_category);
  OverlapShares s;
  if (copies.empty() && compute.empty()) return s;
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const Spans* spans : {&copies, &compute}) {
    for (const auto& [start, end] : *spans) {
      first = std::min(first, start);
      last = std::max(last, end);
    }
  }
  s.wall_us = last - first;
  if (s.wall_us <= 0.0) return OverlapShares{};
  const double copy = length(copies), busy = length(compute), both = shared(copies, compute);
  s.copy_busy = copy / s.wall_us;
  s.compute_busy = busy / s.wall_us;
  s.idle = std::max(0.0, 1.0 - (copy + busy - both) / s.wall_us);
  s.copy_hidden = copy > 0.0 ? both / copy : 0.0;
  return s;
}

nlohmann::json chrome_trace(const std::vector<TraceOp>& ops, const std::vector<std::string>& track_names) {
  constexpr int kProcess = 1;  // one process: this program's GPU
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kProcess}, {"tid", 0},
                    {"args", {{"name", "GPU (CUDA event timestamps)"}}}});
  for (std::size_t t = 0; t < track_names.size(); ++t) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", kProcess}, {"tid", static_cast<int>(t)},
                      {"args", {{"name", track_names[t]}}}});
    // Perfetto sorts tracks by this index, so streams appear in order.
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kProcess},
                      {"tid", static_cast<int>(t)}, {"args", {{"sort_index", static_cast<int>(t)}}}});
  }
  for (const TraceOp& op : ops) {
    if (op.track < 0 || static_cast<std::size_t>(op.track) >= track_names.size()) {
      throw std::invalid_argument("trace op '" + op.name + "' names track " + std::to_string(op.track) +
                                  " of " + std::to_string(track_names.size()));
    }
    events.push_back({{"name", op.name}, {"cat", op.category}, {"ph", "X"}, {"pid", kProcess},
                      {"tid", op.track}, {"ts", op.start_us}, {"dur", op.duration_us}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"provenance", provenance()}};
}

void write_chrome_trace(const std::string& path, const std::vector<TraceOp>& ops,
                        const std::vector<std::string>& track_names) {
  const std::string text = chrome_trace(ops, track_names).dump(1) + "\n";
  write_output_file("--trace", path, text);
}

}  // namespace workbook

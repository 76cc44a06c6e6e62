// epoch_trace.cpp: the --trace layout (variants and tracks) and the per-variant summary of the ops.
#include "epoch_trace.h"

#include "exit_codes.h"

#include <algorithm>
#include <utility>

namespace workbook::fused {

bool is_traceable(Variant v) {
  return v == Variant::kUnfused || v == Variant::kBlockReduce || v == Variant::kLastBlock || v == Variant::kStreams;
}

int trace_track_count(Variant v) { return v == Variant::kStreams ? 1 + kStreamCount : 1; }

int traced_ops_per_epoch(Variant v) {
  switch (v) {
    case Variant::kUnfused: return 4;
    case Variant::kBlockReduce: return 2;
    case Variant::kLastBlock: return 1;
    case Variant::kStreams: return kStreamCount + 1;
    default: return 0;
  }
}

TraceLayout trace_layout(const std::vector<Variant>& selected) {
  TraceLayout layout;
  for (const Variant v : selected) {
    if (!is_traceable(v)) continue;
    const std::string group = std::to_string(static_cast<int>(v)) + " " + variant_name(v) + ": ";
    layout.variants.push_back(v);
    layout.first_track.push_back(static_cast<int>(layout.tracks.size()));
    if (v == Variant::kStreams) {
      layout.tracks.push_back(group + "stream 0 (update)");
      for (int k = 1; k <= kStreamCount; ++k) layout.tracks.push_back(group + "side stream " + std::to_string(k));
    } else {
      layout.tracks.push_back(group + "stream");
    }
  }
  if (layout.variants.empty()) {
    throw UsageError("--trace records variants 1, 3, 4 and 6 (separate launches per epoch); --variant selects none");
  }
  return layout;
}

std::vector<TracedVariant> summarize_trace(const std::vector<TraceOp>& ops, const TraceLayout& layout,
                                           int epochs) {
  std::vector<TracedVariant> out;
  for (std::size_t i = 0; i < layout.variants.size(); ++i) {
    const int first = layout.first_track[i];
    const int last = first + trace_track_count(layout.variants[i]);
    std::vector<std::pair<double, double>> spans;  // [start, end) of each op, microseconds
    for (const TraceOp& op : ops) {
      if (op.track >= first && op.track < last) spans.emplace_back(op.start_us, op.start_us + op.duration_us);
    }
    TracedVariant t;
    t.variant = layout.variants[i];
    t.ops = static_cast<int>(spans.size());
    if (!spans.empty() && epochs > 0) {
      std::sort(spans.begin(), spans.end());
      double busy = 0.0, end = spans.front().first;  // end: the latest stop so far
      for (const auto& [start, stop] : spans) {      // union of the intervals, sorted by start
        busy += std::max(0.0, stop - std::max(start, end));
        end = std::max(end, stop);
      }
      t.epoch_us = (end - spans.front().first) / epochs;
      t.busy_us = busy / epochs;
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace workbook::fused

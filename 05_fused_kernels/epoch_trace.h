// epoch_trace.h: what `fused_kernels_bench --trace FILE` records of the training loop, in plain
// C++ (the CPU tests check it without a GPU): which variants, one track per CUDA stream of each,
// and what the recorded operations add up to. The recording is common/trace.h's TraceRecorder
// (CUDA events around each operation), and so is the Chrome-trace writer.
//
//   TraceLayout layout = trace_layout(parse_variants("all"));       // variants 1, 3, 4, 6: 8 tracks
//   workbook::TraceRecorder recorder(layout.tracks);
//   ... bench_fused.cpp records kTracedEpochs epochs of each, after kTraceWarmupEpochs ...
//   workbook::write_chrome_trace("trace.json", recorder.ops(), layout.tracks);
//   std::vector<TracedVariant> seen = summarize_trace(recorder.ops(), layout, 3);
#pragma once

#include "trace.h"
#include "fused_kernels.h"

#include <string>
#include <vector>

namespace workbook::fused {

// Epochs recorded per variant, after untimed warm-up epochs (first-launch costs stay out of the picture).
inline constexpr int kTracedEpochs = 3;
inline constexpr int kTraceWarmupEpochs = 2;

// Variants whose epochs are separate launches, so that events can sit between their kernels:
// 1 (04's kernels), 3 (fused + update), 4 (one kernel per epoch), 6 (K streams + join + update).
// Variant 5 is one graph launch and variant 7 one kernel for every epoch; 2 is variant 3's shape.
bool is_traceable(Variant v);

// Tracks (CUDA streams) of a traced variant: 1, or variant 6's stream plus its kStreamCount side streams.
int trace_track_count(Variant v);

// GPU operations recorded per epoch, each between a pair of events: 1: forward, loss, backward,
// step (the loss and the backward pass are two kernels each, launched together); 3: fused sums, update;
// 4: fused sums with the last block's step; 6: one segment per side stream, then the update.
int traced_ops_per_epoch(Variant v);

struct TraceLayout {
  std::vector<Variant> variants;    // the traceable variants of the selection, in its order
  std::vector<int> first_track;     // variants[i]'s tracks start at this index of `tracks`
  std::vector<std::string> tracks;  // "1 unfused: stream", "6 streams: side stream 2", ...
};

// Tracks are named "<variant>: <stream>" so that 03's plot_trace.py draws one panel per variant.
// Throws UsageError naming --trace when the selection holds no traceable variant.
TraceLayout trace_layout(const std::vector<Variant>& selected);

// One traced variant, per epoch: `epoch_us` from its first operation's start to its last one's
// end over the traced epochs, divided by them; `busy_us` the part of that with at least one of its
// operations running on the GPU (overlapping operations on several streams count once).
struct TracedVariant {
  Variant variant = Variant::kUnfused;
  int ops = 0;
  double epoch_us = 0.0;
  double busy_us = 0.0;
};
std::vector<TracedVariant> summarize_trace(const std::vector<TraceOp>& ops, const TraceLayout& layout,
                                           int epochs);

}  // namespace workbook::fused

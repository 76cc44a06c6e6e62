// trace.h: GPU operations recorded with a pair of CUDA events each, and written as a Chrome trace
// (the JSON that Perfetto, chrome://tracing and the PyTorch profiler's export use), one track
// ("thread") per CUDA stream. Chapter 03 traces its copy/compute pipelines, chapter 05's bench
// its training epochs.
//
//   workbook::TraceRecorder trace({"stream 0", "stream 1"});
//   trace.mark_origin(stream0);                                        // time zero
//   trace.op(stream1, 1, "H2D 3", "copy_in", [&] { enqueue_copy(...); });
//   workbook::write_chrome_trace("trace.json", trace.ops(), trace.tracks());
//
// Each op becomes one complete event ("ph": "X") with start and duration in microseconds; each
// track gets one metadata event naming it. overlap_shares() says what a stretch of copies and
// compute adds up to (chapter 04's bench prints it for each mini-batch pipeline it traces).
#pragma once

#include "event_timer.h"

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace workbook {

struct TraceOp {
  std::string name;      // "H2D 3", "e2 fused sums"
  std::string category;  // "copy_in", "compute", ...: the colour in the picture
  int track = 0;         // index into the track names (one per stream)
  double start_us = 0.0;
  double duration_us = 0.0;
};

// Records a pair of timing events around each traced operation; the times are read afterwards,
// relative to an origin event recorded before the traced work (every traced stream must be
// ordered after that origin, by a fork from the origin's stream).
class TraceRecorder {
 public:
  explicit TraceRecorder(std::vector<std::string> track_names) : tracks_(std::move(track_names)) {}

  // Time zero: the first call records it, later calls (a second traced schedule) keep it.
  void mark_origin(cudaStream_t stream) {
    if (origin_marked_) return;
    origin_.record(stream);
    origin_marked_ = true;
  }

  template <class Enqueue>
  void op(cudaStream_t stream, int track, std::string name, std::string category, Enqueue&& enqueue) {
    Pending& p = pending_.emplace_back(Pending{std::move(name), std::move(category), track,
                                               Event(EventTiming::kEnabled), Event(EventTiming::kEnabled)});
    p.start.record(stream);
    enqueue();
    p.stop.record(stream);
  }

  // Waits for the traced work, then converts the events to microseconds after the origin.
  std::vector<TraceOp> ops() const;
  const std::vector<std::string>& tracks() const { return tracks_; }

 private:
  struct Pending {
    std::string name;
    std::string category;
    int track;
    Event start;
    Event stop;
  };
  std::vector<std::string> tracks_;
  Event origin_{EventTiming::kEnabled};
  bool origin_marked_ = false;
  std::vector<Pending> pending_;
};

// How the ops of a trace shared the time from the first op's start to the last op's end (`wall_us`),
// as fractions of it: at least one copy running (category `copy_category`), at least one compute op
// running, neither; and `copy_hidden`, the part of the copy time with compute running beside it (the
// transfer time that costs nothing). Overlapping ops of one category count once; ops of other
// categories are left out, of the wall too. No wall (no ops, or only instants): all zero; no copy
// time: copy_hidden zero. A negative duration counts as zero.
struct OverlapShares {
  double wall_us = 0.0;
  double copy_busy = 0.0;
  double compute_busy = 0.0;
  double idle = 0.0;
  double copy_hidden = 0.0;
};
OverlapShares overlap_shares(const std::vector<TraceOp>& ops, const std::string& copy_category = "copy_in",
                             const std::string& compute_category = "compute");

// Throws std::invalid_argument when an op names a track that does not exist.
nlohmann::json chrome_trace(const std::vector<TraceOp>& ops, const std::vector<std::string>& track_names);

// Throws std::runtime_error when the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<TraceOp>& ops,
                        const std::vector<std::string>& track_names);

}  // namespace workbook

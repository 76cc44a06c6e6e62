// chrome_trace.h: write GPU operations as a Chrome trace (the JSON that Perfetto, chrome://tracing
// and the PyTorch profiler's export use), one track ("thread") per CUDA stream.
//
//   std::vector<TraceOp> ops{{"H2D 0", "copy_in", 0, 0.0, 80.5}, {"compute 0", "compute", 0, 80.5, 75.0}};
//   nlohmann::json trace = chrome_trace(ops, {"stream 0"});
//   write_chrome_trace("trace.json", ops, {"stream 0"});
//
// Each op becomes one complete event ("ph": "X") with start and duration in microseconds; each
// track gets one metadata event naming it. No CUDA here: the events come from pipeline.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace streams_events {

struct TraceOp {
  std::string name;      // "H2D 3", "compute 3", "D2H 3"
  std::string category;  // "copy_in", "compute" or "copy_out": the colour in the picture
  int track = 0;         // index into the track names (one per stream)
  double start_us = 0.0;
  double duration_us = 0.0;
};

// Throws std::invalid_argument when an op names a track that does not exist.
nlohmann::json chrome_trace(const std::vector<TraceOp>& ops, const std::vector<std::string>& track_names);

// Throws std::runtime_error when the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<TraceOp>& ops,
                        const std::vector<std::string>& track_names);

}  // namespace streams_events

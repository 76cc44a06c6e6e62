// trace.cpp: the recorded events as times, and the Chrome trace event format (as much of it as a
// timeline of streams needs).
#include "trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>
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
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void write_chrome_trace(const std::string& path, const std::vector<TraceOp>& ops,
                        const std::vector<std::string>& track_names) {
  const std::string text = chrome_trace(ops, track_names).dump(1) + "\n";
  std::ofstream file(path);
  file << text;
  file.close();
  if (!file) throw std::runtime_error("cannot write --trace file '" + path + "': " + std::strerror(errno));
}

}  // namespace workbook

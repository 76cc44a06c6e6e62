// overlap_bound.h: how fast a copy-in / compute / copy-out pipeline can possibly be, and how close
// a measured schedule came. Pure arithmetic (no CUDA), so the CPU tests check it.
//
//   StageTimes t{h2d_ms, compute_ms, d2h_ms, both_copies_at_once_ms};  // each measured on its own
//   const double bound = duplex_speedup(t);                             // the bound that holds
//   const double eff = overlap_efficiency(serial_ms / pipelined_ms, bound);
//
// The three stages use three different pieces of hardware: the host-to-device copy engine, the
// SMs, and the device-to-host copy engine. The textbook bound follows from that alone: with a copy
// engine per direction (cudaDevAttrAsyncEngineCount >= 2) all three can be busy at once, so a
// perfect pipeline takes as long as its busiest stage, sum / max(h2d, compute, d2h); with one
// copy engine the two copies queue behind each other, sum / max(h2d + d2h, compute).
//
// Separate engines do not make separate wires: both directions cross the same PCIe link and the
// same host memory, and on a real machine copying both ways at once is slower than either copy
// alone. The bound that holds is therefore taken from a measurement of the two copies running
// together: sum / max(compute, both_copies_at_once). It equals the textbook bound on a perfect
// full-duplex link, and the one-engine bound when the copies serialise. When compute takes at least
// as long as both copies at once (the default workload is calibrated so), the busiest stage is the
// SMs either way and the two bounds are the same number.
#pragma once

#include <algorithm>

namespace workbook::streams_events {

struct StageTimes {
  double copy_in_ms = 0.0;
  double compute_ms = 0.0;
  double copy_out_ms = 0.0;
  double copies_together_ms = 0.0;  // every H2D and every D2H at once, on two streams (0: not measured)

  double sum_ms() const { return copy_in_ms + compute_ms + copy_out_ms; }
};

enum class CopyEngines { kOneShared, kOnePerDirection };

inline CopyEngines copy_engines_from_count(int async_engine_count) {
  return async_engine_count >= 2 ? CopyEngines::kOnePerDirection : CopyEngines::kOneShared;
}

// The textbook bound, from the stages measured alone: the busiest resource's total time.
inline double ideal_time_ms(const StageTimes& t, CopyEngines engines) {
  if (engines == CopyEngines::kOneShared) return std::max(t.copy_in_ms + t.copy_out_ms, t.compute_ms);
  return std::max({t.copy_in_ms, t.compute_ms, t.copy_out_ms});
}

// Serial time over the ideal time: the largest speedup overlap can give (1 to 3).
inline double ideal_speedup(const StageTimes& t, CopyEngines engines) {
  const double ideal = ideal_time_ms(t, engines);
  return ideal > 0.0 ? t.sum_ms() / ideal : 0.0;
}

// The copies' floor: the time the link needs to move both directions' bytes while both run (never
// below either copy alone, should the measurement be missing or noisy). The default workload
// calibrates its compute stage to this time, not to the slower copy alone: then compute is the
// busiest stage measured alone, and the textbook bound is one that a schedule can reach.
inline double copy_floor_ms(const StageTimes& t) {
  return std::max({t.copies_together_ms, t.copy_in_ms, t.copy_out_ms});
}

// The bound measured with both copy directions busy: no schedule can beat the SMs' time, nor the
// copies' floor.
inline double duplex_time_ms(const StageTimes& t) { return std::max(t.compute_ms, copy_floor_ms(t)); }

inline double duplex_speedup(const StageTimes& t) {
  const double bound = duplex_time_ms(t);
  return bound > 0.0 ? t.sum_ms() / bound : 0.0;
}

// With `chunks` equal chunks, the first chunk must go through every stage before the busiest
// stage can run back to back, and the last one must drain: the pipeline cannot beat
// max + (sum - max) / chunks, with the busiest resource taken from the duplex measurement.
inline double pipeline_floor_ms(const StageTimes& t, int chunks) {
  const double busiest = duplex_time_ms(t);
  return chunks > 0 ? busiest + std::max(0.0, t.sum_ms() - busiest) / chunks : 0.0;
}

// Achieved speedup as a fraction of the ideal one (1.0 = the bound was reached).
inline double overlap_efficiency(double achieved_speedup, double ideal) {
  return ideal > 0.0 ? achieved_speedup / ideal : 0.0;
}

}  // namespace workbook::streams_events

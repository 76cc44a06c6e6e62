// event_timer.h: time GPU work with CUDA events, after warm-up, over many repeats.
//
//   workbook::Stats t = workbook::time_on_stream(stream, {/*warmup=*/3, /*repeats=*/20},
//                                                [&] { my_launcher(..., stream); });
//   std::printf("%.3f ms median (min %.3f, max %.3f)\n", t.median, t.min, t.max);
//
// Each repeat is bracketed by its own pair of events on `stream`, so the numbers are GPU time
// between the two records: host-side launch cost counts only when the GPU had to wait for it.
#pragma once

#include "cuda_check.h"
#include "stats.h"
#include "stream.h"

#include <chrono>
#include <vector>

namespace workbook {

struct Repeats {
  int warmup = 3;
  int timed = 20;
};

template <class Work>
Stats time_on_stream(cudaStream_t stream, Repeats repeats, Work&& work) {
  for (int i = 0; i < repeats.warmup; ++i) work();
  std::vector<Event> starts, stops;
  for (int i = 0; i < repeats.timed; ++i) {
    starts.emplace_back(EventTiming::kEnabled);
    stops.emplace_back(EventTiming::kEnabled);
  }
  for (int i = 0; i < repeats.timed; ++i) {
    starts[i].record(stream);
    work();
    stops[i].record(stream);
  }
  std::vector<double> ms;
  for (int i = 0; i < repeats.timed; ++i) {
    stops[i].synchronize();
    ms.push_back(elapsed_ms(starts[i], stops[i]));
  }
  return summarize(std::move(ms));
}

// For work that the host waits on (or CPU code): the host clock, in milliseconds. `work` must
// finish its GPU part before returning (synchronize inside it) for the time to mean anything.
template <class Work>
Stats time_on_host(Repeats repeats, Work&& work) {
  for (int i = 0; i < repeats.warmup; ++i) work();
  std::vector<double> ms;
  for (int i = 0; i < repeats.timed; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    const auto stop = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return summarize(std::move(ms));
}

}  // namespace workbook

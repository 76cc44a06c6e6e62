// workload.h: chapter 03's workload in plain C++, shared by the lesson (streams_events.cu) and the
// bench (bench_streams.cpp): its flags, its buffers and input, and the helpers of the bit-for-bit
// checks.
//
//   WorkloadOptions w;
//   add_workload_options(app, w);                     // --chunks, --chunk-elements, --iterations
//   ... parse ...
//   finish_workload_options(app, common.quick, w);    // --quick's sizes, then every range checked
//   BatchBuffers buffers(w);                          // pinned host + device memory, input filled
#pragma once

#include "streams_events.h"

#include "common_options.h"
#include "device_buffer.h"

#include <cstddef>

namespace workbook::streams_events {

struct WorkloadOptions {
  int chunks = 64;
  long long chunk_elements = 1 << 20;  // 4 MiB of floats per chunk
  int iterations = 0;                  // 0: calibrate (see Calibration)
};
void add_workload_options(CLI::App& app, WorkloadOptions& options);
// After parsing: --quick's small sizes where a flag was not given (4 chunks of 65536 floats, 64
// multiply-adds), then every value checked (UsageError naming the flag).
void finish_workload_options(const CLI::App& app, bool quick, WorkloadOptions& options);

// The whole batch pinned on the host and resident on the device, the input filled. Asks for the
// GPU memory first (one line and exit 1 when it does not fit).
struct BatchBuffers {
  workbook::PinnedBuffer<float> host_in, host_out;
  workbook::DeviceBuffer<float> dev_in, dev_out;
  Batch batch;
  explicit BatchBuffers(const WorkloadOptions& options);
};

// Inputs in [-1, 1) from a hash of the index: cheap for 64M elements, and not a pattern that a
// wrong offset could reproduce.
void fill_input(float* x, std::size_t n);

// Every buffer a schedule writes gets NaN bytes first, so that a chunk it skipped or read too
// early cannot pass as the previous run's (identical) answer.
void poison(const Batch& b);

// How many of the first n floats differ from `want` in any bit.
std::size_t count_differences(const float* got, const float* want, std::size_t n);

}  // namespace workbook::streams_events

// small_copies.h: how much of the bus a host-to-device copy of a mini-batch's size gets, five
// ways (linear_regression_bench --copy-sizes). A batch of 64,000 points is two copies of 256 KB;
// at that size a copy's fixed cost is a large part of its time, and part 2's pipelines pay it
// twice a step.
//
//   const std::vector<CopyRate> rates = measure_small_copies({64 << 10, 256 << 10, 1 << 20}, 64 << 20, stream);
//
// Each way moves the same `total` bytes of pinned host memory to the GPU as total / size copies
// of `size` bytes, one after another on one stream, and every byte is checked on arrival:
//   kMemcpyAsync  one cudaMemcpyAsync per copy (what part 2's pipelines do);
//   kBatched      all of them in one cudaMemcpyBatchAsync call (CUDA 12.8+);
//   kGraph        the same cudaMemcpyAsync calls captured once into a CUDA graph, replayed;
//   kKernel       one kernel launch per copy that reads the pinned memory itself (16-byte loads
//                 over the bus, no copy engine);
//   kTwoStreams   one cudaMemcpyAsync per copy, the copies taking turns on two streams, so that
//                 one copy's start overlaps the other's transfer (a second copy engine).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace workbook::linear_regression {

enum class CopyWay { kMemcpyAsync, kBatched, kGraph, kKernel, kTwoStreams };
inline constexpr int kCopyWayCount = 5;
const char* copy_way_name(CopyWay way);  // "memcpy_async", "batched", "graph", "kernel", "two_streams"

struct CopyRate {
  CopyWay way = CopyWay::kMemcpyAsync;
  std::size_t size = 0;  // bytes per copy
  double gbps = 0.0;     // total bytes over the median time of one pass, 1e9 bytes/s
  bool correct = false;  // every byte arrived
};

// Every way at every size (each a multiple of 16 bytes dividing `total`), a pass of `total`
// bytes timed with CUDA events: median of 5 after 2 warm-up passes. Throws std::invalid_argument
// on a size that does not divide `total` or is not a multiple of 16.
std::vector<CopyRate> measure_small_copies(const std::vector<std::size_t>& sizes, std::size_t total,
                                           cudaStream_t stream);

}  // namespace workbook::linear_regression

// small_copies.cu: five ways to bring many small pieces of pinned host memory to the GPU, each
// timed over the same bytes and checked byte for byte (small_copies.h).
//
// A copy engine moves a pinned buffer at the bus's rate once it is going; what it costs to get
// going (the driver's work per call, the engine's setup, the first bytes' trip across the bus)
// is paid per copy. The ways differ in which of those they pay per copy: one call per copy pays
// all of them; a batch pays the call once; a graph pays its launch once and its nodes' setup
// each; a kernel pays a launch per copy, and its threads' loads cross the bus themselves, as many
// in flight as there are threads; two streams pay all of it per copy, but two copies at a time.
#include "small_copies.h"

#include "ceil_div.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "event_timer.h"
#include "stats.h"
#include "stream.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace workbook::linear_regression {
namespace {

constexpr int kCopyThreads = 256;
constexpr int kMaxCopyBlocks = 1024;

// One piece: `count` 16-byte words from mapped pinned host memory to the device, a grid-stride
// loop so that any size runs on a bounded grid.
__global__ void __launch_bounds__(kCopyThreads)
    copy_from_host_kernel(const uint4* __restrict__ host, uint4* __restrict__ device, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    device[i] = host[i];
  }
}

class SmallCopies {
 public:
  SmallCopies(std::size_t total, cudaStream_t stream) : total_(total), stream_(stream), host_(total), device_(total) {
    // Every byte different from its neighbours' (a piece in the wrong place shows), the same every run.
    for (std::size_t i = 0; i < total; ++i) host_.data()[i] = static_cast<std::byte>((i * 2654435761u) >> 24);
    void* mapped = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&mapped, host_.data(), 0));
    host_on_device_ = static_cast<const std::byte*>(mapped);
  }

  // One way at one size: the median pass, then the check of what arrived.
  CopyRate measure(CopyWay way, std::size_t size) {
    const std::size_t pieces = total_ / size;
    std::function<void()> pass;
    std::optional<GraphExec> graph;
    std::vector<void*> dsts(pieces);
    std::vector<const void*> srcs(pieces);
    std::vector<std::size_t> sizes(pieces, size);
    for (std::size_t k = 0; k < pieces; ++k) {
      dsts[k] = device_.data() + k * size;
      srcs[k] = host_.data() + k * size;
    }
    switch (way) {
      case CopyWay::kMemcpyAsync:
        pass = [&] { copy_each(pieces, size); };
        break;
      case CopyWay::kBatched:
        pass = [&] {
          cudaMemcpyAttributes attrs{};
          attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;  // the source as the stream finds it
          std::size_t first = 0;
          CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), pieces, &attrs, &first, 1, stream_));
        };
        break;
      case CopyWay::kGraph: {
        StreamCapture capture(stream_);
        copy_each(pieces, size);
        graph.emplace(capture.end());
        pass = [&] { graph->launch(stream_); };
        break;
      }
      case CopyWay::kKernel:
        pass = [&] { copy_by_kernel(pieces, size); };
        break;
      case CopyWay::kTwoStreams:
        pass = [&] { copy_on_two_streams(pieces, size); };
        break;
    }
    CUDA_CHECK(cudaMemsetAsync(device_.data(), 0, total_, stream_));
    const Stats t = time_on_stream(stream_, {2, 5}, pass);  // 2 warm-up passes, the median of 5
    std::vector<std::byte> arrived(total_);
    CUDA_CHECK(cudaMemcpy(arrived.data(), device_.data(), total_, cudaMemcpyDeviceToHost));
    return {way, size, gigabytes_per_second(static_cast<double>(total_), t.median),
            std::memcmp(arrived.data(), host_.data(), total_) == 0};
  }

 private:
  void copy_each(std::size_t pieces, std::size_t size) {
    for (std::size_t k = 0; k < pieces; ++k) {
      CUDA_CHECK(cudaMemcpyAsync(device_.data() + k * size, host_.data() + k * size, size, cudaMemcpyHostToDevice,
                                 stream_));
    }
  }
  // Even pieces on the timed stream, odd ones on a second stream forked from it and joined back
  // before the pass ends (the events make the second stream's copies part of the timed pass).
  void copy_on_two_streams(std::size_t pieces, std::size_t size) {
    forked_.record(stream_);
    CUDA_CHECK(cudaStreamWaitEvent(second_.get(), forked_.get(), 0));
    for (std::size_t k = 0; k < pieces; ++k) {
      CUDA_CHECK(cudaMemcpyAsync(device_.data() + k * size, host_.data() + k * size, size, cudaMemcpyHostToDevice,
                                 k % 2 == 0 ? stream_ : second_.get()));
    }
    joined_.record(second_.get());
    CUDA_CHECK(cudaStreamWaitEvent(stream_, joined_.get(), 0));
  }
  void copy_by_kernel(std::size_t pieces, std::size_t size) {
    const std::size_t words = size / sizeof(uint4);
    const int blocks = static_cast<int>(
        std::min<std::int64_t>(ceil_div(static_cast<std::int64_t>(words), kCopyThreads), kMaxCopyBlocks));
    for (std::size_t k = 0; k < pieces; ++k) {
      copy_from_host_kernel<<<blocks, kCopyThreads, 0, stream_>>>(
          reinterpret_cast<const uint4*>(host_on_device_ + k * size), reinterpret_cast<uint4*>(device_.data() + k * size),
          words);
      CUDA_CHECK_LAUNCH();
    }
  }

  std::size_t total_;
  cudaStream_t stream_;
  PinnedBuffer<std::byte> host_;
  DeviceBuffer<std::byte> device_;
  const std::byte* host_on_device_ = nullptr;  // host_ as the GPU addresses it (mapped pinned memory)
  Stream second_;  // kTwoStreams' other stream
  Event forked_, joined_;
};

}  // namespace

const char* copy_way_name(CopyWay way) {
  switch (way) {
    case CopyWay::kMemcpyAsync: return "memcpy_async";
    case CopyWay::kBatched: return "batched";
    case CopyWay::kGraph: return "graph";
    case CopyWay::kKernel: return "kernel";
    case CopyWay::kTwoStreams: return "two_streams";
  }
  return "?";
}

std::vector<CopyRate> measure_small_copies(const std::vector<std::size_t>& sizes, std::size_t total,
                                           cudaStream_t stream) {
  for (const std::size_t size : sizes) {
    if (size == 0 || size % 16 != 0 || total % size != 0) {
      throw std::invalid_argument("measure_small_copies: " + std::to_string(size) +
                                  " bytes is not a multiple of 16 dividing " + std::to_string(total));
    }
  }
  SmallCopies copies(total, stream);
  std::vector<CopyRate> rates;
  for (const std::size_t size : sizes) {
    for (int w = 0; w < kCopyWayCount; ++w) rates.push_back(copies.measure(static_cast<CopyWay>(w), size));
  }
  return rates;
}

}  // namespace workbook::linear_regression

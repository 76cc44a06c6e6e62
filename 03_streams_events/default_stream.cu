// default_stream.cu: step 6 of chapter 03's lesson, the default stream. Work issued without a stream
// goes to the legacy default stream (stream 0, what PyTorch's current stream is unless you make
// another), and that stream is special: a kernel on it waits for all earlier work on every
// blocking stream of the device, and later work on those streams waits for it. A stream made with
// cudaStreamNonBlocking is exempt. The per-thread default stream (cudaStreamPerThread, or every
// stream-0 call when compiled with --default-stream per-thread) behaves as an ordinary blocking
// stream: it does not wait for other streams, but it does wait for the legacy default stream.
// Each case here launches kernel A on one stream, then kernel B on another, each kernel stamping
// its start and end from the GPU's nanosecond clock: B waited for A exactly when it started after
// A ended.
#include "streams_events.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "globaltimer.cuh"
#include "stream.h"

#include <string>
#include <utility>

namespace workbook::streams_events {
namespace {

using workbook::DeviceBuffer;
using workbook::global_timer_ns;

__global__ void stamped_spin_kernel(long long nanoseconds, unsigned long long* stamps) {
  const unsigned long long start = global_timer_ns();
  unsigned long long now = start;
  while (now - start < static_cast<unsigned long long>(nanoseconds)) now = global_timer_ns();
  stamps[0] = start;
  stamps[1] = now;
}

// A stream with the default flags: blocking, so it synchronizes with the legacy default stream.
class BlockingStream {
 public:
  BlockingStream() { CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~BlockingStream() { (void)cudaStreamDestroy(stream_); }
  BlockingStream(const BlockingStream&) = delete;
  BlockingStream& operator=(const BlockingStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// A on `first`, then B on `second`, both `kernel_ns` long: did B wait for A?
DefaultStreamCase run_case(std::string name, cudaStream_t first, cudaStream_t second, long long kernel_ns) {
  DeviceBuffer<unsigned long long> stamps(4);
  CUDA_CHECK(cudaMemset(stamps.data(), 0, stamps.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());
  stamped_spin_kernel<<<1, 1, 0, first>>>(kernel_ns, stamps.data());
  CUDA_CHECK_LAUNCH();
  stamped_spin_kernel<<<1, 1, 0, second>>>(kernel_ns, stamps.data() + 2);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  unsigned long long t[4] = {};
  CUDA_CHECK(cudaMemcpy(t, stamps.data(), sizeof t, cudaMemcpyDeviceToHost));
  DefaultStreamCase c;
  c.name = std::move(name);
  c.waited = t[2] >= t[1];
  c.b_start_after_a_start_us = (static_cast<double>(t[2]) - static_cast<double>(t[0])) / 1e3;
  return c;
}

}  // namespace

std::vector<DefaultStreamCase> measure_default_stream(long long kernel_ns) {
  BlockingStream blocking, other_blocking;
  workbook::Stream non_blocking;
  return {
      run_case("blocking stream, then the legacy default stream", blocking.get(), cudaStreamLegacy, kernel_ns),
      run_case("non-blocking stream, then the legacy default stream", non_blocking.get(), cudaStreamLegacy, kernel_ns),
      run_case("blocking stream, then the per-thread default stream", blocking.get(), cudaStreamPerThread, kernel_ns),
      run_case("two blocking streams", blocking.get(), other_blocking.get(), kernel_ns),
  };
}

}  // namespace workbook::streams_events

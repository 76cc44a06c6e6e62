// copy_ceiling.cpp: a device-to-device copy, timed.
#include "copy_ceiling.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "event_timer.h"
#include "nvtx.h"

namespace workbook {

double device_copy_gbps(std::size_t bytes, cudaStream_t stream) {
  NvtxRange range("copy ceiling");
  DeviceBuffer<char> source(bytes), destination(bytes);
  CUDA_CHECK(cudaMemsetAsync(source.data(), 1, bytes, stream));  // initialised: initcheck stays quiet
  const Stats t = time_on_stream(stream, {2, 10}, [&] {
    CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice, stream));
  });
  return 2.0 * static_cast<double>(bytes) / (t.median * 1e6);
}

}  // namespace workbook

// Planted mistakes for exercise 01 bandwidth: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "bandwidth.h"

#include "cuda_check.h"

#include <cuda_runtime_api.h>

namespace workbook::device_query::exercise {

double peak_bandwidth_gbps(int device) {
  int clock_khz = 0, bus_bits = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
#if defined(PLANTED_SINGLE_RATE)
  const double transfers_per_second = clock_khz * 1e3;  // one transfer per clock
#else
  const double transfers_per_second = 2.0 * clock_khz * 1e3;
#endif
#if defined(PLANTED_BITS)
  const double bytes_per_transfer = bus_bits;  // bits taken for bytes
#else
  const double bytes_per_transfer = bus_bits / 8.0;
#endif
#if defined(PLANTED_GIB)
  return transfers_per_second * bytes_per_transfer / (1024.0 * 1024.0 * 1024.0);  // GiB/s, not GB/s
#else
  return transfers_per_second * bytes_per_transfer / 1e9;
#endif
}

}  // namespace workbook::device_query::exercise

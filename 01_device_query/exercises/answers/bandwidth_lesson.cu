// The worked answer of exercise 01 bandwidth: the lesson's peak_memory_bandwidth_gbps behind the
// exercise's signature (the checker's test: it must print "correct").
#include "bandwidth.h"

#include "device_query.h"

namespace workbook::device_query::exercise {

double peak_bandwidth_gbps(int device) {
  const DeviceReport r = query_device(device);
  return peak_memory_bandwidth_gbps(r.memory_clock_khz, r.memory_bus_width_bits);
}

}  // namespace workbook::device_query::exercise

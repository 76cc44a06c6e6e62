// Exercise 01 bandwidth: a GPU's peak memory bandwidth from its clock and its bus (the contract:
// bandwidth.h).
//
// Write peak_bandwidth_gbps below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 01 bandwidth
// The chapter's own answer is peak_memory_bandwidth_gbps in device_query.cpp.
#include "bandwidth.h"

#include "cuda_check.h"

#include <cuda_runtime_api.h>

namespace workbook::device_query::exercise {

// TODO(exercise): read the two attributes for `device` and turn them into GB/s.
// Hint: mind three units. The clock is in kHz. The bus width is in bits. HBM and GDDR memory
// move data on both edges of the clock (double data rate).
double peak_bandwidth_gbps(int device) {
  int clock_khz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  return 0.0;
}

}  // namespace workbook::device_query::exercise

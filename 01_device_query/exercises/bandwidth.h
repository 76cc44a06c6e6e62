// bandwidth.h: the contract of exercise 01 bandwidth (bandwidth.cu holds the reader's attempt).
#pragma once

namespace workbook::device_query::exercise {

// The theoretical peak DRAM bandwidth of `device` in GB/s (1e9 bytes per second), from two
// attributes: the memory clock (cudaDevAttrMemoryClockRate) and the bus width
// (cudaDevAttrGlobalMemoryBusWidth). Within 1e-9 (relative) of the spec-sheet arithmetic.
double peak_bandwidth_gbps(int device);

}  // namespace workbook::device_query::exercise

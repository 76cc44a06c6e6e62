// copy_ceiling.h: the bandwidth a memory-bound kernel is measured against: a device-to-device
// copy on the same GPU, in the same run.
//
//   const double ceiling = workbook::device_copy_gbps(std::size_t{1} << 30, stream);   // ~4260 on an H200
//
// GB/s (1e9 bytes per second) counting the bytes read plus the bytes written, as PyTorch's and
// nvbandwidth's copy figures do: a kernel that reads N bytes in time t achieves N / t against it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace workbook {

// Copies `bytes` between two fresh buffers on the current device: 2 warm-up copies, then the
// median of 10, each between a pair of CUDA events on `stream`.
double device_copy_gbps(std::size_t bytes, cudaStream_t stream);

}  // namespace workbook

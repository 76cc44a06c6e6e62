// device_guard.h: the current device set for a scope, and set back after it: what
// `with torch.cuda.device(i):` does. Launches and cudaMalloc go to the current device.
//
//   {
//     workbook::DeviceGuard on(1);   // cudaSetDevice(1), unless it is current already
//     ...                            // allocations and launches on GPU 1
//   }                                // the device current before, again
#pragma once

#include "cuda_check.h"

namespace workbook {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace workbook

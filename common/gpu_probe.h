// gpu_probe.h: is there a usable GPU, and if not, why not. This is what
// torch.cuda.is_available() and torch.cuda.device_count() ask the CUDA runtime.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace workbook {

struct GpuAvailability {
  int device_count = 0;      // cudaGetDeviceCount; 0 when it failed
  int driver_version = 0;    // cudaDriverGetVersion: 0 means no driver is installed
  int runtime_version = 0;   // cudaRuntimeGetVersion: the CUDA this program was built with
  cudaError_t status = cudaSuccess;  // what cudaGetDeviceCount returned
  std::string reason;        // why no GPU is usable; empty when device_count > 0

  bool available() const { return device_count > 0; }
};

// Asks the runtime; never throws for "no GPU", which is an answer here, not an error.
GpuAvailability probe_gpus();

// The reason text for a failed cudaGetDeviceCount (pure, so it is testable without a driver).
// `visible_devices` is CUDA_VISIBLE_DEVICES, or nullptr when it is not set.
std::string explain_no_gpu(cudaError_t status, int driver_version, int runtime_version,
                           const char* visible_devices);

// 13000 -> "13.0", 12040 -> "12.4" (the encoding of cudaDriverGetVersion and friends).
std::string format_cuda_version(int version);

// Makes `index` the current device. Throws NoGpuError when there is no GPU at all and UsageError
// naming the devices that do exist when `index` is not one of them (the runtime's own answer to
// cudaSetDevice with a bad index is cudaErrorInvalidDevice, "invalid device ordinal").
void use_device(int index);

}  // namespace workbook

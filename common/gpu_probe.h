// gpu_probe.h: is there a usable GPU, and if not, why not. This is what
// torch.cuda.is_available() and torch.cuda.device_count() ask the CUDA runtime.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

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

// Makes `index` the current device. The rule every program keeps for --device:
//   no usable GPU at all               NoGpuError (exit 77) with the reason
//   GPUs, but `index` is not one       UsageError (exit 2) naming the devices that exist
// (the runtime's own answer to cudaSetDevice with a bad index is cudaErrorInvalidDevice,
// "invalid device ordinal"). A malformed --device never gets here: the flag's parser refuses it.
void use_device(int index);

// The GPUs of a run on several of them: `count` GPUs from `first` on (count 0: every GPU from
// `first` on), after use_device(first). Throws NoGpuError (exit 77) when there are fewer, naming
// the flags --gpus and --device.
std::vector<int> pick_devices(int first, int count);

// The UsageError text of use_device for a missing index, from the names of the devices that do
// exist: "--device 5: cudaErrorInvalidDevice: invalid device ordinal; this machine has 1 device:
// 0 (NVIDIA H200)". Pure, so testable without a GPU.
std::string missing_device_message(int index, const std::vector<std::string>& names);

}  // namespace workbook

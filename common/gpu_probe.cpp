// gpu_probe.cpp: availability, reasons, and picking a device.
#include "gpu_probe.h"

#include "cuda_check.h"
#include "exit_codes.h"

#include <cstdlib>

namespace workbook {

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string explain_no_gpu(cudaError_t status, int driver_version, int runtime_version,
                           const char* visible_devices) {
  if (driver_version == 0) {
    return "no NVIDIA driver is installed: the CUDA runtime could not load libcuda.so";
  }
  if (status == cudaErrorInsufficientDriver) {
    return "the driver supports CUDA " + format_cuda_version(driver_version) +
           " but this program was built with CUDA " + format_cuda_version(runtime_version) +
           ": update the driver";
  }
  if (status == cudaErrorNoDevice || status == cudaSuccess) {
    if (visible_devices != nullptr && *visible_devices == '\0') {
      return "no CUDA device is visible: CUDA_VISIBLE_DEVICES=\"\" hides them";
    }
    if (visible_devices != nullptr) {
      return std::string("no CUDA device is visible: CUDA_VISIBLE_DEVICES=\"") + visible_devices +
             "\" selects none that exists";
    }
    return "the driver found no CUDA device";
  }
  return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + ": " +
         cudaGetErrorString(status);
}

GpuAvailability probe_gpus() {
  GpuAvailability a;
  // Neither call needs a device; both succeed even when no driver is installed.
  (void)cudaDriverGetVersion(&a.driver_version);
  (void)cudaRuntimeGetVersion(&a.runtime_version);
  a.status = cudaGetDeviceCount(&a.device_count);
  if (a.status != cudaSuccess) {
    a.device_count = 0;
    (void)cudaGetLastError();  // the failure is an answer here; do not leave it for the next check
  }
  if (a.device_count == 0) {
    a.reason = explain_no_gpu(a.status, a.driver_version, a.runtime_version,
                              std::getenv("CUDA_VISIBLE_DEVICES"));
  }
  return a;
}

std::string missing_device_message(int index, const std::vector<std::string>& names) {
  std::string devices;
  for (std::size_t d = 0; d < names.size(); ++d) {
    devices += (d ? ", " : "") + std::to_string(d) + " (" + names[d] + ")";
  }
  return "--device " + std::to_string(index) + ": " + cudaGetErrorName(cudaErrorInvalidDevice) + ": " +
         cudaGetErrorString(cudaErrorInvalidDevice) + "; this machine has " + std::to_string(names.size()) +
         (names.size() == 1 ? " device: " : " devices: ") + devices;
}

void use_device(int index) {
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  const cudaError_t status = cudaSetDevice(index);
  if (status == cudaErrorInvalidDevice) {
    (void)cudaGetLastError();
    std::vector<std::string> names;
    for (int d = 0; d < gpus.device_count; ++d) {
      cudaDeviceProp prop{};
      CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
      names.emplace_back(prop.name);
    }
    throw UsageError(missing_device_message(index, names));
  }
  CUDA_CHECK(status);
}

std::vector<int> pick_devices(int first, int count) {
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  use_device(first);
  const int available = gpus.device_count - first;
  const int wanted = count > 0 ? count : available;
  if (wanted > available) {
    throw NoGpuError("--gpus " + std::to_string(wanted) + " from --device " + std::to_string(first) + " needs " +
                     std::to_string(first + wanted) + " GPUs; this machine has " + std::to_string(gpus.device_count));
  }
  std::vector<int> devices;
  for (int d = 0; d < wanted; ++d) devices.push_back(first + d);
  return devices;
}

}  // namespace workbook

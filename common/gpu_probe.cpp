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

void use_device(int index) {
  const GpuAvailability gpus = probe_gpus();
  if (!gpus.available()) throw NoGpuError(gpus.reason);
  const cudaError_t status = cudaSetDevice(index);
  if (status == cudaErrorInvalidDevice) {
    (void)cudaGetLastError();
    std::string devices;
    for (int d = 0; d < gpus.device_count; ++d) {
      cudaDeviceProp prop{};
      CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
      devices += (d ? ", " : "") + std::to_string(d) + " (" + prop.name + ")";
    }
    throw UsageError("--device " + std::to_string(index) + ": " + cudaGetErrorName(status) + ": " +
                     cudaGetErrorString(status) + "; this machine has " +
                     std::to_string(gpus.device_count) +
                     (gpus.device_count == 1 ? " device: " : " devices: ") + devices);
  }
  CUDA_CHECK(status);
}

}  // namespace workbook

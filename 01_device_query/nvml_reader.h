// nvml_reader.h: what the GPU draws, how warm it is and how fast its SMs clock, read from NVML
// (the library behind nvidia-smi) while device_query_bench runs its matmuls. A GPU near its power
// limit lowers its clock, and with it the TFLOP/s: these readings say whether that happened.
//
//   Nvml nvml(report.pci_bus_id);            // never throws; without NVML: available() is false
//   if (!nvml.available()) out << nvml.reason() << "\n";
//   StateSampler sampler(nvml);               // a reading every 10 ms on its own thread ...
//   run_the_work();
//   const GpuState during = median_state(sampler.stop());  // ... until here
//
// NVML is loaded at run time (dlopen of libnvidia-ml.so.1, which the driver installs) with the
// few declarations this chapter makes itself, so the bench builds without NVML's header and runs,
// without these readings, where the library is missing.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace workbook::device_query {

// One reading.
struct GpuState {
  double power_w = 0.0;        // the board's draw (nvmlDeviceGetPowerUsage, milliwatts / 1000)
  double temperature_c = 0.0;  // the GPU die (NVML_TEMPERATURE_GPU)
  double sm_clock_mhz = 0.0;   // the SM clock now (NVML_CLOCK_SM), not the peak
};

// The median of each field on its own. Throws std::invalid_argument when `samples` is empty.
GpuState median_state(const std::vector<GpuState>& samples);

class Nvml {
 public:
  // Loads NVML and finds the GPU with this PCI bus id (cudaDeviceGetPCIBusId's form). Matching by
  // bus id, not by index: NVML numbers every GPU of the machine in PCI order, CUDA only the
  // visible ones (CUDA_VISIBLE_DEVICES), fastest first by default.
  explicit Nvml(const std::string& pci_bus_id);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool available() const { return api_ != nullptr; }
  const std::string& reason() const { return reason_; }  // why not available: one line
  std::optional<GpuState> read() const;                  // empty when a call fails

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  std::string reason_;
};

// Reads `nvml` at construction, then every `period_ms` on a thread of its own, and once more in
// stop(). The owner of `nvml` must outlive the sampler.
class StateSampler {
 public:
  explicit StateSampler(const Nvml& nvml, int period_ms = 10);
  ~StateSampler();
  StateSampler(const StateSampler&) = delete;
  StateSampler& operator=(const StateSampler&) = delete;

  std::vector<GpuState> stop();  // the readings so far, in order; later calls return none

 private:
  void add(const std::optional<GpuState>& state);
  const Nvml& nvml_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<GpuState> samples_;
  std::thread thread_;
};

}  // namespace workbook::device_query

// nvml_reader.cpp: NVML through dlopen (see nvml_reader.h).
#include "nvml_reader.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace workbook::device_query {

namespace {

// The part of nvml.h this file uses (NVML API Reference): every call returns an nvmlReturn_t,
// 0 (NVML_SUCCESS) when it worked; a device is an opaque handle; the enums are C ints.
using NvmlReturn = int;
struct NvmlDeviceHandle;
using NvmlDevice = NvmlDeviceHandle*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t: NVML_TEMPERATURE_GPU
constexpr int kNvmlClockSm = 1;         // nvmlClockType_t: NVML_CLOCK_SM

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

GpuState median_state(const std::vector<GpuState>& samples) {
  if (samples.empty()) throw std::invalid_argument("median_state: no samples");
  std::vector<double> power, temperature, clock;
  for (const GpuState& s : samples) {
    power.push_back(s.power_w);
    temperature.push_back(s.temperature_c);
    clock.push_back(s.sm_clock_mhz);
  }
  return {median_of(power), median_of(temperature), median_of(clock)};
}

struct Nvml::Api {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;  // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;  // nvmlDeviceGetHandleByPciBusId_v2
  NvmlReturn (*power_usage)(NvmlDevice, unsigned int*) = nullptr;          // milliwatts
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;     // degrees C
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned int*) = nullptr;      // MHz
  NvmlDevice device = nullptr;
  bool initialized = false;

  ~Api() {
    if (initialized) (void)shutdown();
    if (library != nullptr) dlclose(library);
  }

  template <class Function>
  bool find(Function& f, const char* name) {
    f = reinterpret_cast<Function>(dlsym(library, name));
    return f != nullptr;
  }
};

Nvml::Nvml(const std::string& pci_bus_id) {
  auto api = std::make_unique<Api>();
  api->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    const char* why = dlerror();
    reason_ = std::string("libnvidia-ml.so.1 could not be loaded (") + (why ? why : "no reason given") + ")";
    return;
  }
  if (!api->find(api->init, "nvmlInit_v2") || !api->find(api->shutdown, "nvmlShutdown") ||
      !api->find(api->handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !api->find(api->power_usage, "nvmlDeviceGetPowerUsage") ||
      !api->find(api->temperature, "nvmlDeviceGetTemperature") ||
      !api->find(api->clock_info, "nvmlDeviceGetClockInfo")) {
    reason_ = "libnvidia-ml.so.1 lacks a function this program calls";
    return;
  }
  if (const NvmlReturn r = api->init(); r != kNvmlSuccess) {
    reason_ = "nvmlInit_v2 failed (nvmlReturn_t " + std::to_string(r) + ")";
    return;
  }
  api->initialized = true;
  if (const NvmlReturn r = api->handle_by_pci_bus_id(pci_bus_id.c_str(), &api->device); r != kNvmlSuccess) {
    reason_ = "NVML does not know the GPU at " + pci_bus_id + " (nvmlReturn_t " + std::to_string(r) + ")";
    return;
  }
  api_ = std::move(api);
  if (!read()) {  // a GPU that reports no power (some do not) is treated as no NVML
    api_.reset();
    reason_ = "NVML gives no power, temperature or SM clock for the GPU at " + pci_bus_id;
  }
}

Nvml::~Nvml() = default;

std::optional<GpuState> Nvml::read() const {
  if (!api_) return std::nullopt;
  unsigned int milliwatts = 0, celsius = 0, mhz = 0;
  if (api_->power_usage(api_->device, &milliwatts) != kNvmlSuccess ||
      api_->temperature(api_->device, kNvmlTemperatureGpu, &celsius) != kNvmlSuccess ||
      api_->clock_info(api_->device, kNvmlClockSm, &mhz) != kNvmlSuccess) {
    return std::nullopt;
  }
  return GpuState{milliwatts / 1000.0, static_cast<double>(celsius), static_cast<double>(mhz)};
}

StateSampler::StateSampler(const Nvml& nvml, int period_ms) : nvml_(nvml) {
  add(nvml_.read());
  thread_ = std::thread([this, period_ms] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(period_ms), [this] { return stopping_; })) {
      lock.unlock();
      const std::optional<GpuState> state = nvml_.read();  // NVML is thread-safe; no lock held while it runs
      lock.lock();
      if (state) samples_.push_back(*state);
    }
  });
}

StateSampler::~StateSampler() { (void)stop(); }

void StateSampler::add(const std::optional<GpuState>& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state) samples_.push_back(*state);
}

std::vector<GpuState> StateSampler::stop() {
  if (!thread_.joinable()) return {};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  add(nvml_.read());
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(samples_);
}

}  // namespace workbook::device_query

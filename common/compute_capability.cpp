// compute_capability.cpp: the device's compute capability, lowered for tests by one variable.
#include "compute_capability.h"

#include "cuda_check.h"
#include "exit_codes.h"

#include <cuda_runtime_api.h>

#include <cctype>
#include <cstdlib>

namespace workbook {
namespace {

bool all_digits(const std::string& s) {
  for (const char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

ComputeCapability real_capability(int device) {
  ComputeCapability cc;
  CUDA_CHECK(cudaDeviceGetAttribute(&cc.major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&cc.minor, cudaDevAttrComputeCapabilityMinor, device));
  return cc;
}

}  // namespace

ComputeCapability parse_compute_capability(const std::string& text) {
  const std::size_t dot = text.find('.');
  const std::string major = text.substr(0, dot);
  const std::string minor = dot == std::string::npos ? "" : text.substr(dot + 1);
  if (!all_digits(major) || major.size() > 2 || !all_digits(minor) || minor.size() != 1) {
    throw UsageError(std::string(kPretendCapabilityVariable) + " must be MAJOR.MINOR, e.g. 8.0, got '" + text + "'");
  }
  return {std::stoi(major), std::stoi(minor)};
}

ComputeCapability effective_compute_capability(ComputeCapability real, const char* pretend) {
  if (pretend == nullptr || *pretend == '\0') return real;
  const ComputeCapability lower = parse_compute_capability(pretend);
  return real.at_least(lower.major, lower.minor) ? lower : real;
}

std::optional<ComputeCapability> pretended_compute_capability() {
  const char* value = std::getenv(kPretendCapabilityVariable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_compute_capability(value);
}

ComputeCapability device_compute_capability(int device) {
  return effective_compute_capability(real_capability(device), std::getenv(kPretendCapabilityVariable));
}

bool compute_capability_is_pretended(int device) {
  return !(device_compute_capability(device) == real_capability(device));
}

std::string describe_device(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::string s = std::string(prop.name) + " (" + std::to_string(prop.multiProcessorCount) + " SMs, " +
                  std::to_string(prop.l2CacheSize / 1048576) + " MiB L2, cc " + std::to_string(prop.major) + "." +
                  std::to_string(prop.minor) + ")";
  if (compute_capability_is_pretended(device)) {
    s += ", treated as cc " + device_compute_capability(device).text() + " (" + kPretendCapabilityVariable + ")";
  }
  return s;
}

}  // namespace workbook

// compute_capability.h: the one place a workbook program asks which features its GPU has.
//
//   const ComputeCapability cc = workbook::device_compute_capability(device);
//   if (!cc.at_least(9, 0)) { ... skip the Hopper-only variant, say why ... }
//
// Tests can make a newer GPU look older, so that the older-GPU path runs on a Hopper card:
//   WORKBOOK_PRETEND_COMPUTE_CAPABILITY=8.0 fused_kernels --quick
// The variable only ever lowers the answer (a GPU cannot gain features), an empty value counts as
// unset, and a malformed one is refused as a UsageError (exit 2). It is for tests, not a flag.
#pragma once

#include <optional>
#include <string>

namespace workbook {

inline constexpr const char* kPretendCapabilityVariable = "WORKBOOK_PRETEND_COMPUTE_CAPABILITY";

struct ComputeCapability {
  int major = 0;
  int minor = 0;

  bool at_least(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
  std::string text() const { return std::to_string(major) + "." + std::to_string(minor); }  // "8.9"
  friend bool operator==(ComputeCapability a, ComputeCapability b) { return a.major == b.major && a.minor == b.minor; }
};

// "8.0", "8.9", "10.0", "12.1": one or two digits, a dot, one digit. Throws UsageError naming the
// variable and the value otherwise.
ComputeCapability parse_compute_capability(const std::string& text);

// The capability to act on: `pretend` (the variable's value; nullptr or "" when unset) when it is
// lower than `real`, otherwise `real`. Pure, so the CPU tests check it.
ComputeCapability effective_compute_capability(ComputeCapability real, const char* pretend);

// The variable's value, parsed; std::nullopt when it is unset. Throws UsageError when malformed,
// so a program can refuse it before it prints anything.
std::optional<ComputeCapability> pretended_compute_capability();

// What every capability decision uses: the device's own capability (cudaDeviceGetAttribute),
// lowered by the variable when set. Throws CudaError or UsageError.
ComputeCapability device_compute_capability(int device);

// True when the variable lowers this device's capability (for a note in the report).
bool compute_capability_is_pretended(int device);

// The report's device line: "NVIDIA H200 (132 SMs, 60 MiB L2, cc 9.0)", with ", treated as cc 8.0
// (WORKBOOK_PRETEND_COMPUTE_CAPABILITY)" when the variable lowers it.
std::string describe_device(int device);

}  // namespace workbook

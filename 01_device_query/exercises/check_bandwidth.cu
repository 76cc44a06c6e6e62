// check_bandwidth.cu: the checker of exercise 01 bandwidth (the contract: bandwidth.h).
//
// 1. Correct: on every device, against 2 x clock x bus width / 8 from the same two attributes. A
//    wrong answer gets a hint from the factor it is off by (each unit slip has its own).
// 2. Measured: a device-to-device copy (common/copy_ceiling.h) against the attempt's peak, the
//    share real copies reach (chapter 02 measures it from the host). No kernels of the attempt,
//    so no compute-sanitizer pass.
#include "bandwidth.h"

#include "copy_ceiling.h"
#include "cuda_check.h"
#include "exercise.h"
#include "format.h"
#include "program.h"
#include "stream.h"

#include <cmath>

namespace workbook::device_query::exercise {
namespace {

double spec_sheet_gbps(int device) {
  int clock_khz = 0, bus_bits = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

std::string hint_for(double ratio) {
  struct Slip {
    double factor;
    const char* hint;
  };
  constexpr Slip kSlips[] = {
      {0.5, "half the peak: HBM moves data on both clock edges, two transfers per clock (double data rate)"},
      {8.0, "8 times the peak: the bus width is in bits; 8 of them make a byte"},
      {1e-3, "1000 times too small: cudaDevAttrMemoryClockRate is in kHz"},
      {1e9 / 1073741824.0, "GiB/s (2^30 bytes), where the contract asks for GB/s (1e9 bytes)"},
  };
  for (const Slip& s : kSlips) {
    if (std::fabs(ratio / s.factor - 1.0) < 1e-6) return s.hint;
  }
  return format("%.4g times the peak: bytes per second = 2 x clock (Hz) x bus width (bytes), then / 1e9", ratio);
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("01", "bandwidth");
  if (auto code = checker.parse(argc, argv)) return *code;
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));

  // 1. Every device's peak against the arithmetic.
  for (int d = 0; d < count; ++d) {
    const double got = peak_bandwidth_gbps(d);
    const double want = spec_sheet_gbps(d);
    if (!workbook::exercise::close(got, want, 1e-9)) {
      return checker.wrong(format("device %d: %.6g GB/s where %.6g GB/s was expected", d, got, want),
                           hint_for(got / want));
    }
  }

  // 2. What a device-to-device copy of 1 GiB reaches of it, on the checked device.
  Stream stream;
  const double peak = peak_bandwidth_gbps(checker.device());
  const double copy = device_copy_gbps(std::size_t{1} << 30, stream.get());
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, checker.device()));
  return checker.correct(format("a device-to-device copy reaches %.0f GB/s, %.0f%% of your %.0f GB/s peak on %s",
                                copy, 100.0 * copy / peak, peak, prop.name));
}

}  // namespace
}  // namespace workbook::device_query::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::device_query::exercise::run(argc, argv); });
}

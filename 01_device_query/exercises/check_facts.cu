// check_facts.cu: the checker of exercise 01 facts (the contract: facts.h).
//
// 1. Correct: on every device, each fact against cudaGetDeviceProperties. A wrong one gets a hint
//    naming the attribute that gives the value returned, or the unit it is off by.
// 2. Timed (the host clock): read_facts against the lesson's query_device, which reads the whole
//    cudaDeviceProp (as torch.cuda.get_device_properties does) and the free memory.
// No kernels, so no compute-sanitizer pass.
#include "facts.h"

#include "cuda_check.h"
#include "device_query.h"
#include "exercise.h"
#include "format.h"
#include "program.h"

#include <chrono>
#include <string>
#include <vector>

namespace workbook::device_query::exercise {
namespace {

struct Known {
  cudaDeviceAttr attr;
  const char* name;
};

// Attributes a first attempt often takes for one of the five: a wrong value is looked up here.
constexpr Known kLookAlikes[] = {
    {cudaDevAttrComputeCapabilityMajor, "cudaDevAttrComputeCapabilityMajor"},
    {cudaDevAttrComputeCapabilityMinor, "cudaDevAttrComputeCapabilityMinor"},
    {cudaDevAttrMultiProcessorCount, "cudaDevAttrMultiProcessorCount"},
    {cudaDevAttrMaxThreadsPerBlock, "cudaDevAttrMaxThreadsPerBlock"},
    {cudaDevAttrMaxThreadsPerMultiProcessor, "cudaDevAttrMaxThreadsPerMultiProcessor"},
    {cudaDevAttrMaxBlocksPerMultiprocessor, "cudaDevAttrMaxBlocksPerMultiprocessor"},
    {cudaDevAttrWarpSize, "cudaDevAttrWarpSize"},
    {cudaDevAttrL2CacheSize, "cudaDevAttrL2CacheSize"},
    {cudaDevAttrMaxSharedMemoryPerMultiprocessor, "cudaDevAttrMaxSharedMemoryPerMultiprocessor"},
};

std::string hint_for(const char* field, const char* attribute, int got, int want, int device) {
  for (const Known& k : kLookAlikes) {
    int value = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&value, k.attr, device));
    if (value == got && std::string(k.name) != attribute) {
      return format("%d is what %s gives; %s is %s", got, k.name, field, attribute);
    }
  }
  if (got != 0 && want % got == 0) {
    return format("%d is %d times too small: %s counts bytes (or threads) as the attribute gives them, "
                  "with no conversion", got, want / got, field);
  }
  return format("%s is %s, read for this device (the `device` argument)", field, attribute);
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("01", "facts");
  if (auto code = checker.parse(argc, argv)) return *code;
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));

  // 1. Every fact of every device.
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    const DeviceFacts got = read_facts(d);
    struct Fact {
      const char* field;
      const char* attribute;
      int got, want;
    };
    const Fact facts[] = {
        {"major", "cudaDevAttrComputeCapabilityMajor", got.major, p.major},
        {"minor", "cudaDevAttrComputeCapabilityMinor", got.minor, p.minor},
        {"multiprocessors", "cudaDevAttrMultiProcessorCount", got.multiprocessors, p.multiProcessorCount},
        {"max_threads_per_multiprocessor", "cudaDevAttrMaxThreadsPerMultiProcessor",
         got.max_threads_per_multiprocessor, p.maxThreadsPerMultiProcessor},
        {"l2_cache_bytes", "cudaDevAttrL2CacheSize", got.l2_cache_bytes, p.l2CacheSize},
    };
    for (const Fact& f : facts) {
      if (f.got == f.want) continue;
      return checker.wrong(format("device %d: %s = %d where cudaGetDeviceProperties says %d", d, f.field, f.got, f.want),
                           hint_for(f.field, f.attribute, f.got, f.want, d));
    }
  }

  // 2. Timed on the host clock: 20 calls each after 3 warm-up calls.
  auto host_us = [](auto&& call) {
    std::vector<double> us;
    for (int i = 0; i < 23; ++i) {
      const auto start = std::chrono::steady_clock::now();
      call();
      const auto stop = std::chrono::steady_clock::now();
      if (i >= 3) us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    }
    return summarize(us);
  };
  const int d = checker.device();
  const Stats attempt = host_us([&] { (void)read_facts(d); });
  const Stats lesson = host_us([&] { (void)query_device(d); });
  return checker.correct(attempt, lesson, "the chapter's query_device (all of cudaDeviceProp, and the free memory)");
}

}  // namespace
}  // namespace workbook::device_query::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::device_query::exercise::run(argc, argv); });
}

// Planted mistakes for exercise 01 facts: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "facts.h"

#include "cuda_check.h"

#include <cuda_runtime_api.h>

namespace workbook::device_query::exercise {
namespace {

int attribute(cudaDeviceAttr what, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

}  // namespace

DeviceFacts read_facts(int device) {
  DeviceFacts f;
#if defined(PLANTED_SWAPPED)
  f.major = attribute(cudaDevAttrComputeCapabilityMinor, device);  // the two halves of 9.0 swapped
  f.minor = attribute(cudaDevAttrComputeCapabilityMajor, device);
#else
  f.major = attribute(cudaDevAttrComputeCapabilityMajor, device);
  f.minor = attribute(cudaDevAttrComputeCapabilityMinor, device);
#endif
  f.multiprocessors = attribute(cudaDevAttrMultiProcessorCount, device);
#if defined(PLANTED_PER_BLOCK)
  f.max_threads_per_multiprocessor = attribute(cudaDevAttrMaxThreadsPerBlock, device);  // one block's limit
#else
  f.max_threads_per_multiprocessor = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device);
#endif
#if defined(PLANTED_KIB)
  f.l2_cache_bytes = attribute(cudaDevAttrL2CacheSize, device) / 1024;  // as if the attribute were bytes to convert
#else
  f.l2_cache_bytes = attribute(cudaDevAttrL2CacheSize, device);
#endif
  return f;
}

}  // namespace workbook::device_query::exercise

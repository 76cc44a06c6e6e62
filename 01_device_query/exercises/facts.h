// facts.h: the contract of exercise 01 facts (facts.cu holds the reader's attempt).
#pragma once

namespace workbook::device_query::exercise {

// Five facts of one device, as torch.cuda.get_device_properties(device) reports them.
struct DeviceFacts {
  int major = 0, minor = 0;                 // compute capability, e.g. 9.0
  int multiprocessors = 0;                  // SMs
  int max_threads_per_multiprocessor = 0;   // resident threads one SM can hold
  int l2_cache_bytes = 0;
};

// The facts of `device`, each read with cudaDeviceGetAttribute (one cheap query per fact,
// without the whole cudaDeviceProp). Every CUDA call checked (CUDA_CHECK, common/cuda_check.h).
DeviceFacts read_facts(int device);

}  // namespace workbook::device_query::exercise

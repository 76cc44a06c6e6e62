// Exercise 01 facts: five device properties through cudaDeviceGetAttribute (the contract: facts.h).
//
// Write read_facts below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 01 facts
// The chapter's own answer is query_device in device_query.cpp (which reads cudaDeviceProp at once).
#include "facts.h"

#include "cuda_check.h"

#include <cuda_runtime_api.h>

namespace workbook::device_query::exercise {

// TODO(exercise): fill every field of DeviceFacts for `device`, one cudaDeviceGetAttribute each.
// Hint: the attributes are named cudaDevAttr<What> (cuda_runtime_api.h lists them); check that
// each one counts what the field means: per multiprocessor, not per block; bytes, not KiB.
DeviceFacts read_facts(int device) {
  DeviceFacts facts;
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, device));
  facts.major = value;  // one done for you; four to go
  return facts;
}

}  // namespace workbook::device_query::exercise

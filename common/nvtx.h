// nvtx.h: name a phase of the program so that Nsight Systems shows it on the timeline.
//
//   { workbook::NvtxRange range("train"); ... }   // the range ends with the scope
//
// NVTX v3 is header-only and costs a few nanoseconds when no profiler is attached.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace workbook {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace workbook

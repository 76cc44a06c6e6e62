// gpu_support.h: GPU test cases skip, with the reason, where the GPUs they need are missing.
//
//   TEST_CASE("round trip is bit-exact", "[gpu]") {
//     workbook::testing::require_gpus(1);   // SKIP: needs 1 GPU, found 0 (no NVIDIA driver ...)
//     ...
//   }
//
// Tags pick the ctest label: [gpu], [multigpu] or [pytorch]; a case with none of them is `cpu`.
#pragma once

#include "gpu_probe.h"
#include "run_program.h"

#include <catch2/catch_test_macros.hpp>

#include <string>

namespace workbook::testing {

inline void require_gpus(int needed) {
  const GpuAvailability gpus = probe_gpus();
  if (gpus.device_count < needed) {
    SKIP("needs " << needed << " GPU" << (needed == 1 ? "" : "s") << ", found " << gpus.device_count
                  << (gpus.reason.empty() ? std::string() : " (" + gpus.reason + ")"));
  }
}

// A workbook program that ran without a usable GPU exits 77; the test then skips with the
// program's own one-line reason instead of failing.
inline void skip_if_no_gpu(const ProgramResult& r) {
  if (r.exit_code == 77) SKIP("program reports no usable GPU: " << last_line(r.err));
}

// For [pytorch] cases: skips unless python3 imports torch and sees a GPU.
inline void require_torch_cuda(const std::string& python) {
  const ProgramResult r =
      run_program({python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"});
  if (r.exit_code == 3) SKIP("PyTorch is installed but sees no GPU");
  if (r.exit_code != 0) SKIP(python << " cannot import torch: " << last_line(r.err));
}

}  // namespace workbook::testing

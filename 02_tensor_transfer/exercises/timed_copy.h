// timed_copy.h: the contract of exercise 02 timed_copy (timed_copy.cu holds the reader's attempt).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace workbook::transfer::exercise {

// tensor.to('cuda', non_blocking=True) from pinned memory, timed as torch.cuda.Event does:
// copies `bytes` from pinned host memory `src` to device memory `dst` on `stream`, after whatever
// is already queued there, and returns the copy's own time in milliseconds, from two CUDA events
// recorded on `stream` around it. Returns once that time is known. Every CUDA call checked.
float timed_copy_ms(const void* src, void* dst, std::size_t bytes, cudaStream_t stream);

}  // namespace workbook::transfer::exercise

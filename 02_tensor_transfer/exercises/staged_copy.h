// staged_copy.h: the contract of exercise 02 staged_copy (staged_copy.cu holds the reader's attempt).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace workbook::transfer::exercise {

// x.to('cuda') from pageable memory, as the driver does it: copies `bytes` from pageable host
// memory `src` to device memory `dst` through the two pinned staging buffers of `chunk` bytes
// each, in turns: chunk i (the last may be shorter) is memcpy'd into staging[i % 2], then copied
// with cudaMemcpyAsync on `stream`, after whatever is already queued there; done[i % 2] (an event,
// timing disabled) is recorded after that copy, and the host refills a staging buffer only once
// the copy that read it has ended. Returns once every byte has landed. Every CUDA call checked.
void staged_copy(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2], std::size_t chunk,
                 cudaEvent_t const (&done)[2], cudaStream_t stream);

}  // namespace workbook::transfer::exercise

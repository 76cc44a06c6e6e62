// Planted mistakes for exercise 02 staged_copy: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "staged_copy.h"

#include "cuda_check.h"

#include <cstring>

namespace workbook::transfer::exercise {

void staged_copy(void* dst, const void* src, std::size_t bytes, std::byte* const (&staging)[2], std::size_t chunk,
                 cudaEvent_t const (&done)[2], cudaStream_t stream) {
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
#if defined(PLANTED_TAIL)
  const std::size_t end = bytes / chunk * chunk;  // whole chunks only: the short last one is dropped
#else
  const std::size_t end = bytes;
#endif
#if defined(PLANTED_WRONG_STREAM)
  const cudaStream_t on = nullptr;  // the legacy default stream: not after `stream`'s work
  (void)stream;
#else
  const cudaStream_t on = stream;
#endif
  for (std::size_t offset = 0, i = 0; offset < end; offset += chunk, ++i) {
    const std::size_t n = end - offset < chunk ? end - offset : chunk;
#if !defined(PLANTED_NO_WAIT)  // without it, a buffer is refilled while its copy may not have run yet
    CUDA_CHECK(cudaEventSynchronize(done[i % 2]));
#endif
    std::memcpy(staging[i % 2], from + offset, n);
    CUDA_CHECK(cudaMemcpyAsync(to + offset, staging[i % 2], n, cudaMemcpyHostToDevice, on));
    CUDA_CHECK(cudaEventRecord(done[i % 2], on));
  }
#if !defined(PLANTED_NO_FINAL_WAIT)  // without it, the call returns with the last copies in flight
  CUDA_CHECK(cudaStreamSynchronize(on));
#endif
}

}  // namespace workbook::transfer::exercise

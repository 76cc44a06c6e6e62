// Planted mistakes for exercise 02 timed_copy: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "timed_copy.h"

#include "cuda_check.h"

#include <chrono>

namespace workbook::transfer::exercise {

float timed_copy_ms(const void* src, void* dst, std::size_t bytes, cudaStream_t stream) {
#if defined(PLANTED_HOST_CLOCK)
  // The host clock around an asynchronous copy: it times the queuing, not the copy.
  const auto start = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
#else
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
#if defined(PLANTED_WRONG_STREAM)
  // Events and copy on the legacy default stream: nothing orders them after `stream`'s work.
  (void)stream;
  CUDA_CHECK(cudaEventRecord(start, nullptr));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, nullptr));
  CUDA_CHECK(cudaEventRecord(stop, nullptr));
#else
  CUDA_CHECK(cudaEventRecord(start, stream));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaEventRecord(stop, stream));
#endif
#if !defined(PLANTED_NO_WAIT)  // without it, the elapsed time is asked for before `stop` happened
  CUDA_CHECK(cudaEventSynchronize(stop));
#endif
  float ms = 0.0f;
  const cudaError_t status = cudaEventElapsedTime(&ms, start, stop);
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(status);
  return ms;
#endif
}

}  // namespace workbook::transfer::exercise

// latch.cu: the latch kernel (latch.h).
#include "latch.h"

#include "cuda_check.h"
#include "globaltimer.cuh"

namespace workbook::multi_gpu {
namespace {

// One thread polls the host's counter through PCIe (volatile: every read goes to host memory).
// On timeout it says so in release[1], so that the sample is not taken for a GPU-paced one.
__global__ void latch_kernel(volatile unsigned* release, unsigned ticket, unsigned long long timeout_ns) {
  const unsigned long long start = workbook::global_timer_ns();
  while (release[0] < ticket) {
    if (workbook::global_timer_ns() - start > timeout_ns) {  // the host never raised it: go on, do not hang
      release[1] = ticket;
      return;
    }
  }
}

}  // namespace

void launch_latch(unsigned* release, unsigned ticket, double timeout_ms, cudaStream_t stream) {
  latch_kernel<<<1, 1, 0, stream>>>(release, ticket, static_cast<unsigned long long>(timeout_ms * 1e6));
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::multi_gpu

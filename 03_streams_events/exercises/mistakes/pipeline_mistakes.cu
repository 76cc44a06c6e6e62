// Planted mistakes for exercise 03 pipeline: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "pipeline.h"

#include "cuda_check.h"

namespace workbook::streams_events::exercise {

void enqueue_pipeline(const Batch& b, cudaStream_t transfer, cudaStream_t compute,
                      const std::vector<cudaEvent_t>& copied) {
#if defined(PLANTED_WAIT_FIRST)
  // Every wait queued before any event is recorded: a wait on an unrecorded event waits for nothing.
  for (int c = 0; c < b.chunks; ++c) CUDA_CHECK(cudaStreamWaitEvent(compute, copied[c], 0));
#endif
  for (int c = 0; c < b.chunks; ++c) {
    enqueue_copy_in(b, c, transfer);
#if defined(PLANTED_ONE_STREAM)
    (void)compute;
    (void)copied;
    enqueue_compute(b, c, transfer);  // compute and copy out left on `transfer`: `compute` holds nothing
    enqueue_copy_out(b, c, transfer);
#else
    CUDA_CHECK(cudaEventRecord(copied[c], transfer));
#if !defined(PLANTED_NO_WAIT) && !defined(PLANTED_WAIT_FIRST)
    CUDA_CHECK(cudaStreamWaitEvent(compute, copied[c], 0));
#endif
#if defined(PLANTED_HOST_WAIT)
    CUDA_CHECK(cudaEventSynchronize(copied[c]));  // right, but the host now waits for every copy
#endif
    enqueue_compute(b, c, compute);
    enqueue_copy_out(b, c, compute);
#endif
  }
}

}  // namespace workbook::streams_events::exercise

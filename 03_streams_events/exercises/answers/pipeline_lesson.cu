// The worked answer of exercise 03 pipeline: the lesson's TwoStreamPipeline behind the exercise's
// signature (the checker's test: it must print "correct"). The pipeline owns its two streams, so
// they are forked from the caller's (its streams wait for what the caller queued) and joined back
// into `compute`; `copied` is not needed, the pipeline has its own events.
#include "pipeline.h"

#include "cuda_check.h"
#include "stream.h"

namespace workbook::streams_events::exercise {

void enqueue_pipeline(const Batch& b, cudaStream_t transfer, cudaStream_t compute,
                      const std::vector<cudaEvent_t>& copied) {
  (void)copied;
  TwoStreamPipeline pipeline(b.chunks);
  Event transfer_ready, compute_ready, done;
  transfer_ready.record(transfer);
  compute_ready.record(compute);
  CUDA_CHECK(cudaStreamWaitEvent(pipeline.transfer(), transfer_ready.get(), 0));
  CUDA_CHECK(cudaStreamWaitEvent(pipeline.compute(), compute_ready.get(), 0));
  pipeline.enqueue(b, Ordering::kEventWait);
  done.record(pipeline.compute());
  CUDA_CHECK(cudaStreamWaitEvent(compute, done.get(), 0));
}

}  // namespace workbook::streams_events::exercise

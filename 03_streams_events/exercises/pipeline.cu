// Exercise 03 pipeline: two streams and an event per chunk, the article's copy/compute overlap
// (the contract: pipeline.h).
//
// Write enqueue_pipeline below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 03 pipeline
// The chapter's own answer is TwoStreamPipeline::enqueue in streams_events.cu.
#include "pipeline.h"

#include "cuda_check.h"

namespace workbook::streams_events::exercise {

// TODO(exercise): the loop over chunks below runs every stage on `transfer`, so nothing overlaps
// and `compute`, which the caller waits on, holds no work. Move the compute and the copy out to
// `compute`, and close the race that opens: after chunk c's copy, record copied[c] on `transfer`;
// before chunk c's kernel, make `compute` wait for it (cudaEventRecord, cudaStreamWaitEvent).
// Hint: a wait on an event that has not been recorded yet waits for nothing; and no
// cudaStreamSynchronize here: the host must only queue.
void enqueue_pipeline(const Batch& b, cudaStream_t transfer, cudaStream_t compute,
                      const std::vector<cudaEvent_t>& copied) {
  (void)compute;
  (void)copied;
  for (int c = 0; c < b.chunks; ++c) {
    enqueue_copy_in(b, c, transfer);
    enqueue_compute(b, c, transfer);
    enqueue_copy_out(b, c, transfer);
  }
}

}  // namespace workbook::streams_events::exercise

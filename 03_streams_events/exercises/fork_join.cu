// Exercise 03 fork_join: what torch.cuda.Stream.wait_stream does, to fan work out to side streams
// and back (the contract: fork_join.h).
//
// Write fork and join below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 03 fork_join
// The chapter's own answer is ForkJoin::fork and ForkJoin::join in streams_events.cu (the
// MultiStreamPipeline opens and closes with them).
#include "fork_join.h"

#include "cuda_check.h"

namespace workbook::streams_events::exercise {

// TODO(exercise): "B waits for A" is an event recorded on A, then cudaStreamWaitEvent(B, that
// event): B's later work starts only after A's work queued before the record. fork: one record
// on streams[0], a wait on every side stream. join: a record on each side stream, each waited
// for by streams[0].
// Hint: a wait on an event that has not been recorded waits for nothing; an event recorded again
// before its wait is queued marks only the last record; and cudaStreamSynchronize would block the
// host, which must only queue.
void fork(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
  (void)streams;
  (void)events;
}

void join(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
  (void)streams;
  (void)events;
}

}  // namespace workbook::streams_events::exercise

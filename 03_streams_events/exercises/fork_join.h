// fork_join.h: the contract of exercise 03 fork_join (fork_join.cu holds the reader's attempt).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

namespace workbook::streams_events::exercise {

// torch.cuda.Stream.wait_stream, both ways, for streams[0] (the origin) and its side streams
// streams[1..]:
// fork: every side stream waits for all the work queued on streams[0] so far;
// join: streams[0] waits for all the work queued on every side stream so far.
// GPU-side waits only: each call only queues and returns at once. `events` holds one event per
// stream (timing disabled), free for the call to record (fork: events[0] on streams[0]; join:
// events[k] on side stream k); an event may be recorded again once a wait on it has been queued
// (the wait keeps the record it saw).
void fork(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events);
void join(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events);

}  // namespace workbook::streams_events::exercise

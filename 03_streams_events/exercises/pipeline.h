// pipeline.h: the contract of exercise 03 pipeline (pipeline.cu holds the reader's attempt).
#pragma once

#include "streams_events.h"

#include <cuda_runtime_api.h>

#include <vector>

namespace workbook::streams_events::exercise {

// The article's two-stream pipeline. For each chunk c of `b`: copy it in on `transfer`
// (enqueue_copy_in), then compute it and copy it out on `compute` (enqueue_compute,
// enqueue_copy_out), so that chunk c + 1 is copied in while chunk c is computed. The kernel of a
// chunk must never read it before its copy has landed: `copied` holds b.chunks events (timing
// disabled) to record on `transfer` and wait on from `compute`. Work already queued on either
// stream comes first. The call only queues: it returns at once, and the caller waits on `compute`.
void enqueue_pipeline(const Batch& b, cudaStream_t transfer, cudaStream_t compute,
                      const std::vector<cudaEvent_t>& copied);

}  // namespace workbook::streams_events::exercise

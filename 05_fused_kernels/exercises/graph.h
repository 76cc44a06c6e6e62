// graph.h: the contract of exercise 05 graph (graph.cu holds the reader's attempt).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace workbook::fused::exercise {

// Chapter 05's variant 5, the launches of a whole training run recorded once: epoch(e) queues
// epoch e's launch on `stream` (e = 0, 1, ..., epochs - 1, in that order); capture_epochs records
// all of them, by stream capture on `stream`, into one CUDA graph and returns it (the caller owns
// it: it instantiates the graph, launches it for a whole run, and destroys it). Nothing may run
// on the GPU during the call. Every CUDA call checked.
cudaGraph_t capture_epochs(int epochs, const std::function<void(int)>& epoch, cudaStream_t stream);

}  // namespace workbook::fused::exercise

// Planted mistakes for exercise 05 graph: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "graph.h"

#include "cuda_check.h"

namespace workbook::fused::exercise {

cudaGraph_t capture_epochs(int epochs, const std::function<void(int)>& epoch, cudaStream_t stream) {
#if defined(PLANTED_RUNS_TOO)
  for (int e = 0; e < epochs; ++e) epoch(e);  // a "warm-up" run before the capture: it trains
#endif
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
#if defined(PLANTED_ONE_EPOCH)
  (void)epochs;
  epoch(0);  // one epoch recorded, for a graph meant to hold the run
#else
  for (int e = 0; e < epochs; ++e) {
#if defined(PLANTED_SAME_EPOCH)
    epoch(0);  // epoch 0's arguments every time
#else
    epoch(e);
#endif
#if defined(PLANTED_SYNC_INSIDE)
    CUDA_CHECK(cudaStreamSynchronize(stream));  // waits for a stream that is recording, not running
#endif
  }
#endif
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  return graph;
}

}  // namespace workbook::fused::exercise

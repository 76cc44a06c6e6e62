// The worked answer of exercise 05 graph: the lesson's capture_epochs (ladder.cpp) behind the
// exercise's signature (the checker's test: it must print "correct").
#include "graph.h"

#include "fused_kernels.h"

namespace workbook::fused::exercise {

cudaGraph_t capture_epochs(int epochs, const std::function<void(int)>& epoch, cudaStream_t stream) {
  return fused::capture_epochs(epochs, epoch, stream);
}

}  // namespace workbook::fused::exercise

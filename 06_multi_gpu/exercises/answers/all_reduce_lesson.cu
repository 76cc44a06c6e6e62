// The worked answer of exercise 06 all_reduce: the lesson's own all_reduce_sums (multi_gpu.cu),
// behind the exercise's signature (the checker's test: it must print "correct").
#include "all_reduce.h"

#include "multi_gpu.h"

namespace workbook::multi_gpu::exercise {

void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams) {
  multi_gpu::all_reduce_sums(buffers, comms, streams);
}

}  // namespace workbook::multi_gpu::exercise

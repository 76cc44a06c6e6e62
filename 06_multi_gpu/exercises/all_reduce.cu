// Exercise 06 all_reduce: DataParallel's all-reduce of the three sums over every GPU, issued by one
// host thread (the contract: all_reduce.h).
//
// Write all_reduce_sums below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 06 all_reduce        (it needs two GPUs)
// The chapter's own answer is all_reduce_sums in multi_gpu.cu, called from DataParallel's epoch.
#include "all_reduce.h"

#include "nccl_check.h"

namespace workbook::multi_gpu::exercise {

// TODO(exercise): one ncclAllReduce per GPU, in place (send and receive the same buffer), of the
// 3 floats, summed, on that GPU's communicator and stream; all of them between ncclGroupStart()
// and ncclGroupEnd().
// Hint: the count is in elements, not bytes; the sums are added (the step divides by n itself);
// and one thread that issues the GPUs' parts one by one, outside a group, waits in the first
// for peers it has not reached yet.
void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams) {
  (void)buffers;
  (void)comms;
  (void)streams;
}

}  // namespace workbook::multi_gpu::exercise

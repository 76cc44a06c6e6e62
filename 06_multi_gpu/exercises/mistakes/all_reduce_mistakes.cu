// Planted mistakes for exercise 06 all_reduce: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "all_reduce.h"

#include "nccl_check.h"

namespace workbook::multi_gpu::exercise {

void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams) {
#if defined(PLANTED_AVERAGE)
  const ncclRedOp_t op = ncclAvg;  // PyTorch's DDP averages its gradients; these sums must add
#else
  const ncclRedOp_t op = ncclSum;
#endif
#if defined(PLANTED_BYTES)
  const std::size_t count = 3 * sizeof(float);  // bytes where NCCL counts elements
#else
  const std::size_t count = 3;
#endif
#if defined(PLANTED_SYNC_FIRST)
  for (const cudaStream_t stream : streams) (void)cudaStreamSynchronize(stream);  // "to be safe": blocks the host
#endif
#if !defined(PLANTED_NO_GROUP)  // without the group, the first call waits for peers not yet issued
  NCCL_CHECK(ncclGroupStart());
#endif
  for (std::size_t d = 0; d < buffers.size(); ++d) {
    const cudaStream_t stream = streams[d];
    NCCL_CHECK(ncclAllReduce(buffers[d], buffers[d], count, ncclFloat, op, comms[d], stream));
  }
#if !defined(PLANTED_NO_GROUP)
  NCCL_CHECK(ncclGroupEnd());
#endif
#if defined(PLANTED_HOST_WAIT)
  for (const cudaStream_t stream : streams) (void)cudaStreamSynchronize(stream);  // blocks the host
#endif
}

}  // namespace workbook::multi_gpu::exercise

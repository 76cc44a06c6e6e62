// all_reduce.h: the contract of exercise 06 all_reduce (all_reduce.cu holds the reader's attempt).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <vector>

namespace workbook::multi_gpu::exercise {

// DataParallel's gradient all-reduce, as one process issues it for every GPU: buffers[d] holds GPU
// d's three sums (3 floats in GPU d's memory) and becomes the sum of every GPU's three, in place,
// queued on streams[d] after the work already there, over comms[d] (GPU d's communicator, from
// ncclCommInitAll). The call only queues: it returns without waiting for the GPUs (except in the
// communicators' first collective, in which NCCL connects them, on the host), and the caller
// waits on the streams.
// Every NCCL call checked (NCCL_CHECK, common/nccl_check.h).
void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams);

}  // namespace workbook::multi_gpu::exercise

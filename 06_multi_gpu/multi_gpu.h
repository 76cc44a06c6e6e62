// multi_gpu.h: chapter 06's first lesson program, data parallelism over NCCL, the way PyTorch's
// DataParallel (multi_gpu.cu) and DistributedDataParallel (ddp.cu) do it, over one Replica per
// GPU (replica.h). by_hand.h is the second program: the same training with the sums exchanged by
// hand, and on the GPUs' chips.
//
//   Problem p = make_problem(config);                                    // points = the global set
//   ParallelRun dp = train_data_parallel(p, {0, 1, 2, 3}, /*repeats=*/3);  // one process, 4 GPUs
//   ParallelRun ddp = train_ddp_rank(p, setup, 3);                        // one process per GPU
//
// Host-only declarations with plain types (g++ compiles this header); the kernels live in the .cu.
#pragma once

#include "replica.h"
#include "support/lesson_main.h"
#include "support/nccl_comm.h"
#include "support/training_run.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <vector>

namespace workbook::multi_gpu {

// DataParallel's all-reduce of the sums: buffers[d] (3 floats on GPU d) becomes the sum over every
// GPU, in place, queued on streams[d] after the work already there, as one NCCL collective over
// comms[d] (from ncclCommInitAll). Only queues; the caller waits on the streams.
void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams);

// Where the sums may live instead of each replica's own buffer: the bench's nccl_symmetric puts
// them in buffers NCCL registered for its symmetric kernels (bench/symmetric_windows.h). Made
// after the communicators and closed (or, on an exception, destroyed) before them. The lesson
// passes none.
class SumsBuffers {
 public:
  virtual ~SumsBuffers() = default;
  virtual float* buffer(std::size_t gpu) const = 0;  // 3 floats on that GPU; nullptr: the replica's own
  virtual void close() = 0;                          // after the last collective
  virtual std::string exchange() const = 0;          // what ran, for ParallelRun::exchange
  virtual std::string note() const = 0;
};
using DpSumsBuffers = std::function<std::unique_ptr<SumsBuffers>(CommunicatorGroup&, const std::vector<int>& devices)>;
using RankSumsBuffers = std::function<std::unique_ptr<SumsBuffers>(Communicator&, cudaStream_t, const Watch&)>;

// The DataParallel analog: one process, one host thread, one Replica per device, communicators
// from ncclCommInitAll. One untimed run, then `repeats` timed runs (each gives the same bits).
ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats,
                                const DpSumsBuffers& sums_buffers = nullptr);

// The DistributedDataParallel analog, run by every rank: the rank's shard, a communicator from
// the unique id, each epoch's all-reduce, bounded waits (nccl_comm.h). At the end every rank's
// result is all-gathered, so every rank returns the whole ParallelRun.
ParallelRun train_ddp_rank(const Problem& problem, const RankSetup& setup, int repeats,
                           const RankSumsBuffers& sums_buffers = nullptr);

}  // namespace workbook::multi_gpu

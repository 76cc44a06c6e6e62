// sharding.h: how the training set is cut into one shard per rank, and which GPU a rank drives.
//
//   Shard s = workbook::multi_gpu::shard_of(4'000'000, /*ranks=*/3, /*rank=*/1);   // {1333334, 1333333}
//   int device = device_for_local_rank(local_rank, first_device, device_count);
//
// Plain C++: the CPU tests check it without a GPU.
#pragma once

#include <cstdint>
#include <optional>

namespace workbook::multi_gpu {

// A contiguous piece [start, start + count) of a range of points.
struct Shard {
  std::int64_t start = 0;
  std::int64_t count = 0;
};

// Shard `rank` of `ranks` over [first, first + total): contiguous, in rank order, every point in
// exactly one shard; the total % ranks left-over points go one each to the lowest ranks, so shard
// sizes differ by at most one (what torch.tensor_split does, and DistributedSampler without padding).
Shard shard_of(std::int64_t total, int ranks, int rank, std::int64_t first = 0);

// The GPU a rank drives: rank r of a node uses device first_device + local_rank. Throws
// NoGpuError (exit 77) when the node has too few GPUs: one process per GPU, as NCCL requires.
int device_for_local_rank(int local_rank, int first_device, int device_count);

// The node-local rank an MPI launcher exports (OpenMPI, MPICH/Hydra, Slurm), if any. `getenv`
// is a parameter so that the tests can pass their own environment.
using EnvLookup = const char* (*)(const char*);
std::optional<int> local_rank_from_environment(EnvLookup getenv_fn);
const char* process_environment(const char* name);  // std::getenv, as an EnvLookup

}  // namespace workbook::multi_gpu

// plan.h: the arithmetic of data parallelism, in plain C++ (no CUDA, no NCCL): how the training
// set is split into shards, which GPU a rank drives, what an all-reduce's bandwidth means, which
// sizes and GPU counts the benchmarks visit, and how bytes travel as hex in an environment variable.
//
//   Shard s = workbook::multi_gpu::shard_of(4'000'000, /*ranks=*/3, /*rank=*/1);   // {1333334, 1333333}
//   double bus = workbook::multi_gpu::bus_bandwidth(algbw, ranks);                 // algbw * 2(n-1)/n
//   std::string hex = workbook::multi_gpu::to_hex(bytes, 128);                     // for the launcher
//
// The CPU tests check all of it on a machine without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// All-reduce bandwidth as nccl-tests defines it. algbw = bytes / time. busbw = algbw * 2(n-1)/n:
// a ring all-reduce moves 2(n-1)/n of the buffer over each GPU's busiest link (n-1 steps of
// reduce-scatter, n-1 of all-gather, each 1/n of the buffer), so busbw compares with the link's
// bandwidth whatever n is. For n = 1 busbw is 0 (nothing crosses a link).
double algorithm_bandwidth_gbps(double bytes, double milliseconds);
double bus_bandwidth(double algbw, int ranks);
double bus_factor(int ranks);  // 2(n-1)/n

// The all-reduce sizes in bytes: from `min_bytes` multiplying by `factor` while <= max_bytes,
// and max_bytes itself last when the steps miss it. Sizes are multiples of 4 (float elements).
std::vector<std::size_t> allreduce_sizes(std::size_t min_bytes, std::size_t max_bytes, int factor);

// The GPU a rank drives: rank r of a node uses device first_device + local_rank. Throws
// NoGpuError (exit 77) when the node has too few GPUs: one process per GPU, as NCCL requires.
int device_for_local_rank(int local_rank, int first_device, int device_count);

// The node-local rank an MPI launcher exports (OpenMPI, MPICH/Hydra, Slurm), if any. `getenv`
// is a parameter so that the tests can pass their own environment.
using EnvLookup = const char* (*)(const char*);
std::optional<int> local_rank_from_environment(EnvLookup getenv_fn);
const char* process_environment(const char* name);  // std::getenv, as an EnvLookup

// Bytes <-> lowercase hex, two characters per byte. from_hex throws std::invalid_argument for a
// wrong length or a character that is not a hex digit.
std::string to_hex(const void* bytes, std::size_t count);
void from_hex(const std::string& hex, void* bytes, std::size_t count);

// "1,2,4" -> {1, 2, 4} (counts 1 to 1024); "5M,100M" -> {5000000, 100000000} (common/cli.h's
// sizes, 2 to 2e9 points). Throw UsageError naming `flag`, for an empty item ("1,,2") too.
std::vector<int> parse_int_list(const std::string& text, const char* flag);
std::vector<std::int64_t> parse_point_list(const std::string& text, const char* flag);

// The ddp flags against each other and the part that runs, before any CUDA call (UsageError):
// --nproc and --fail-* only where ddp runs, --nproc at most --gpus, and --fail-rank one of the
// ranks when their number is known (--nproc, else --gpus; 0 for either means "not given").
// require_rank_exists: "--fail-rank 5: rank 5 does not exist among 2 (ranks are 0 to 1)".
enum class DdpRuns { kNo, kYes };
void check_ddp_flags(int nproc, int gpus, int fail_rank, DdpRuns ddp);
void require_rank_exists(int fail_rank, int ranks);

// The GPU counts a scaling run visits: each of `wanted` that this machine has, in order.
std::vector<int> usable_gpu_counts(const std::vector<int>& wanted, int available);

// Per-GPU scaling efficiency. Weak: t(1) / t(n) (the same work per GPU should take the same
// time). Strong: t(1) / (n t(n)) (n GPUs should take 1/n of the time).
double weak_efficiency(double t1, double tn);
double strong_efficiency(double t1, double tn, int gpus);

}  // namespace workbook::multi_gpu

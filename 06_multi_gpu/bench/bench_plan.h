// bench_plan.h: the arithmetic of multi_gpu_bench, in plain C++ (no CUDA, no NCCL): what an
// all-reduce's bandwidth means, which sizes and GPU counts it visits, its list flags, and
// scaling efficiency.
//
//   double bus = workbook::multi_gpu::bus_bandwidth(algbw, ranks);                 // algbw * 2(n-1)/n
//   auto sizes = workbook::multi_gpu::allreduce_sizes(8, 1 << 30, 2);              // 8 B .. 1 GiB
//
// The CPU tests check all of it on a machine without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

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

// "1,2,4" -> {1, 2, 4} (counts 1 to 1024); "5M,100M" -> {5000000, 100000000} (common/cli.h's
// sizes, 2 to 2e9 points). Throw UsageError naming `flag`, for an empty item ("1,,2") too.
std::vector<int> parse_int_list(const std::string& text, const char* flag);
std::vector<std::int64_t> parse_point_list(const std::string& text, const char* flag);

// The ddp flags against each other and the part that runs, before any CUDA call (UsageError):
// --nproc and --fault-rank only where ddp runs, --nproc at most --gpus, and --fault-rank one of the
// ranks when their number is known (--nproc, else --gpus; 0 for either means "not given").
// require_rank_exists: "--fault-rank 5: rank 5 does not exist among 2 (ranks are 0 to 1)".
enum class DdpRuns { kNo, kYes };
void check_ddp_flags(int nproc, int gpus, int fault_rank, DdpRuns ddp);
void require_rank_exists(int fault_rank, int ranks);

// The GPU counts a scaling run visits: each of `wanted` that this machine has, in order.
std::vector<int> usable_gpu_counts(const std::vector<int>& wanted, int available);

// Per-GPU scaling efficiency. Weak: t(1) / t(n) (the same work per GPU should take the same
// time). Strong: t(1) / (n t(n)) (n GPUs should take 1/n of the time).
double weak_efficiency(double t1, double tn);
double strong_efficiency(double t1, double tn, int gpus);

}  // namespace workbook::multi_gpu

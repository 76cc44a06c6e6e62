// bench_plan.cpp: bandwidth arithmetic, sizes, the list flags' limits, scaling efficiency.
#include "bench_plan.h"

#include "cli.h"  // parse_int_list, parse_size_list
#include "exit_codes.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace workbook::multi_gpu {

double algorithm_bandwidth_gbps(double bytes, double milliseconds) { return bytes / (milliseconds * 1e6); }

double bus_factor(int ranks) { return ranks <= 1 ? 0.0 : 2.0 * (ranks - 1) / ranks; }

double bus_bandwidth(double algbw, int ranks) { return algbw * bus_factor(ranks); }

std::vector<std::size_t> allreduce_sizes(std::size_t min_bytes, std::size_t max_bytes, int factor) {
  if (min_bytes < 4 || min_bytes % 4 != 0 || max_bytes < min_bytes || max_bytes % 4 != 0 || factor < 2) {
    throw std::invalid_argument("allreduce_sizes: sizes must be multiples of 4 bytes, min <= max, factor >= 2");
  }
  std::vector<std::size_t> sizes;
  for (std::size_t s = min_bytes; s <= max_bytes; s *= static_cast<std::size_t>(factor)) {
    sizes.push_back(s);
    if (s > max_bytes / static_cast<std::size_t>(factor)) break;  // the next step would overflow past max
  }
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  return sizes;
}

std::vector<int> parse_int_list(const std::string& text, const char* flag) {
  return workbook::parse_int_list(flag, text, 1, 1024);
}

std::vector<std::int64_t> parse_point_list(const std::string& text, const char* flag) {
  return workbook::parse_size_list(flag, text, 2, 2'000'000'000);
}

void require_rank_exists(int fault_rank, int ranks) {
  if (fault_rank >= ranks) {
    throw UsageError("--fault-rank " + std::to_string(fault_rank) + ": rank " + std::to_string(fault_rank) +
                     " does not exist among " + std::to_string(ranks) + " (ranks are 0 to " +
                     std::to_string(ranks - 1) + ")");
  }
}

void check_ddp_flags(int nproc, int gpus, int fault_rank, DdpRuns ddp) {
  if (ddp == DdpRuns::kNo && (fault_rank >= 0 || nproc > 0)) {
    throw UsageError("--nproc and --fault-rank are for ddp (multi_gpu_bench ddp ..., or no part: all of them)");
  }
  if (nproc > 0 && gpus > 0 && nproc > gpus) {
    throw UsageError("--nproc " + std::to_string(nproc) + " needs one GPU per rank, but --gpus is " +
                     std::to_string(gpus));
  }
  const int known_ranks = nproc > 0 ? nproc : gpus;  // 0: one per GPU found, known later
  if (known_ranks > 0) require_rank_exists(fault_rank, known_ranks);
}

std::vector<int> usable_gpu_counts(const std::vector<int>& wanted, int available) {
  std::vector<int> counts;
  for (int n : wanted) {
    if (n <= available && std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
  }
  return counts;
}

double weak_efficiency(double t1, double tn) { return tn > 0 ? t1 / tn : 0.0; }

double strong_efficiency(double t1, double tn, int gpus) { return tn > 0 && gpus > 0 ? t1 / (gpus * tn) : 0.0; }

}  // namespace workbook::multi_gpu

// plan.cpp: shards, bandwidth arithmetic, sizes, rank-to-GPU mapping, hex, the list flags' limits.
#include "plan.h"

#include "cli.h"  // parse_int_list, parse_size_list
#include "exit_codes.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace workbook::multi_gpu {

Shard shard_of(std::int64_t total, int ranks, int rank, std::int64_t first) {
  if (ranks < 1 || rank < 0 || rank >= ranks || total < 0) {
    throw std::invalid_argument("shard_of: rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                                " over " + std::to_string(total) + " points");
  }
  const std::int64_t base = total / ranks;
  const std::int64_t extra = total % ranks;  // the first `extra` ranks take one more point
  Shard s;
  s.start = first + rank * base + std::min<std::int64_t>(rank, extra);
  s.count = base + (rank < extra ? 1 : 0);
  return s;
}

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

int device_for_local_rank(int local_rank, int first_device, int device_count) {
  if (local_rank < 0) throw std::invalid_argument("device_for_local_rank: negative local rank");
  const int device = first_device + local_rank;
  if (device >= device_count) {
    throw NoGpuError("local rank " + std::to_string(local_rank) + " needs GPU " + std::to_string(device) +
                     " (one GPU per rank, from --device " + std::to_string(first_device) + ") but this node has " +
                     std::to_string(device_count));
  }
  return device;
}

std::optional<int> local_rank_from_environment(EnvLookup getenv_fn) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* value = getenv_fn(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long v = std::strtol(value, &end, 10);
    if (*end != '\0' || v < 0 || v > 1'000'000) {
      throw std::invalid_argument(std::string(name) + "='" + value + "' is not a local rank");
    }
    return static_cast<int>(v);
  }
  return std::nullopt;
}

const char* process_environment(const char* name) { return std::getenv(name); }

std::string to_hex(const void* bytes, std::size_t count) {
  static const char digits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::string hex(2 * count, '0');
  for (std::size_t i = 0; i < count; ++i) {
    hex[2 * i] = digits[p[i] >> 4];
    hex[2 * i + 1] = digits[p[i] & 15];
  }
  return hex;
}

void from_hex(const std::string& hex, void* bytes, std::size_t count) {
  if (hex.size() != 2 * count) {
    throw std::invalid_argument("hex text has " + std::to_string(hex.size()) + " characters, want " +
                                std::to_string(2 * count));
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument(std::string("'") + c + "' is not a hex digit");
  };
  auto* p = static_cast<unsigned char*>(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    p[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
}

std::vector<int> parse_int_list(const std::string& text, const char* flag) {
  return workbook::parse_int_list(flag, text, 1, 1024);
}

std::vector<std::int64_t> parse_point_list(const std::string& text, const char* flag) {
  return workbook::parse_size_list(flag, text, 2, 2'000'000'000);
}

void require_rank_exists(int fail_rank, int ranks) {
  if (fail_rank >= ranks) {
    throw UsageError("--fail-rank " + std::to_string(fail_rank) + ": rank " + std::to_string(fail_rank) +
                     " does not exist among " + std::to_string(ranks) + " (ranks are 0 to " +
                     std::to_string(ranks - 1) + ")");
  }
}

void check_ddp_flags(int nproc, int gpus, int fail_rank, DdpRuns ddp) {
  if (ddp == DdpRuns::kNo && (fail_rank >= 0 || nproc > 0)) {
    throw UsageError("--nproc, --fail-rank and --fail-epoch are for ddp (multi_gpu ddp ..., or no part: all of them)");
  }
  if (nproc > 0 && gpus > 0 && nproc > gpus) {
    throw UsageError("--nproc " + std::to_string(nproc) + " needs one GPU per rank, but --gpus is " +
                     std::to_string(gpus));
  }
  const int known_ranks = nproc > 0 ? nproc : gpus;  // 0: one per GPU found, known later
  if (known_ranks > 0) require_rank_exists(fail_rank, known_ranks);
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

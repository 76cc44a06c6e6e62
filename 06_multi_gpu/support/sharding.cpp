// sharding.cpp: shards, and the rank-to-GPU mapping.
#include "sharding.h"

#include "exit_codes.h"

#include <cstdlib>
#include <string>

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

}  // namespace workbook::multi_gpu

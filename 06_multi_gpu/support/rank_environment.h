// rank_environment.h: what a DDP rank of this chapter finds in its environment: who it is (set
// by multi_gpu_bench's launcher, see launcher.h), the NVLink-multicast-off variables every process
// of the chapter keeps, and the rank's end of the launcher's pipes (stop messages, heartbeats).
//
//   apply_forced_environment();                      // first thing in main(): multicast off
//   if (auto me = worker_identity_from_environment(&process_environment)) { ... rank me->rank ... }
//
// Plain C++ (no CUDA, no NCCL): the CPU tests check all of it.
#pragma once

#include "sharding.h"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace workbook::multi_gpu {

// The variables the launcher sets for each worker.
inline constexpr const char* kRankVariable = "WORKBOOK_DDP_RANK";
inline constexpr const char* kWorldSizeVariable = "WORKBOOK_DDP_WORLD_SIZE";
inline constexpr const char* kLocalRankVariable = "WORKBOOK_DDP_LOCAL_RANK";
inline constexpr const char* kNcclIdVariable = "WORKBOOK_NCCL_ID";
inline constexpr const char* kControlFdVariable = "WORKBOOK_DDP_CONTROL_FD";
inline constexpr const char* kHeartbeatFdVariable = "WORKBOOK_DDP_HEARTBEAT_FD";

// NVLink multicast (NVLS) stays off in every process of this program, whatever its parent had,
// because a program that uses it can take a shared host's GPUs out of service. NCCL reads these
// variables once, at its first call, so they must be set before any NCCL call in the process.
std::vector<std::pair<std::string, std::string>> forced_environment();

// setenv(name, value, 1) for each of forced_environment(). Call it first thing in main(), while
// the process has one thread (setenv is not safe beside another thread's getenv).
void apply_forced_environment();

// Throws std::runtime_error naming the first variable of forced_environment() whose value in this
// process's environment differs. Called before every NCCL entry point of this chapter.
void require_forced_environment();

// "NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1": the values in
// effect in this process ("(unset)" for a missing one), for the reports.
std::string forced_environment_text();

struct WorkerIdentity {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string nccl_id_hex;
  int control_fd = -1;    // -1: no launcher pipe (e.g. started by hand)
  int heartbeat_fd = -1;  // the write end of the heartbeat pipe to the launcher, -1: none
};

// nullopt when kRankVariable is not set (not a worker); throws std::invalid_argument naming the
// variable when one is malformed or inconsistent (rank >= world size, missing id).
std::optional<WorkerIdentity> worker_identity_from_environment(EnvLookup getenv_fn);

// "NAME=value" -> "NAME".
std::string variable_name(const std::string& entry);

// Bytes <-> lowercase hex, two characters per byte. from_hex throws std::invalid_argument for a
// wrong length or a character that is not a hex digit.
std::string to_hex(const void* bytes, std::size_t count);
void from_hex(const std::string& hex, void* bytes, std::size_t count);

// The worker's end of the launcher's pipes. poll() never blocks: nullopt while nothing has
// arrived, else the launcher's message (or a note that the launcher is gone: the pipe closed).
// heartbeat() tells the launcher this rank is still running its wait loops: one byte at most
// every 100 ms, never blocking. A rank that waits for a stuck peer keeps beating; the stuck one
// falls silent, and that is how the launcher tells the two apart.
class ControlChannel {
 public:
  explicit ControlChannel(int fd, int heartbeat_fd = -1);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;
  std::optional<std::string> poll();
  void heartbeat();

 private:
  int fd_ = -1;
  int heartbeat_fd_ = -1;
  std::chrono::steady_clock::time_point last_beat_{};
  std::string buffer_;
  std::optional<std::string> message_;
};

}  // namespace workbook::multi_gpu

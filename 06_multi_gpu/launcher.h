// launcher.h: the built-in single-node launcher of `multi_gpu ddp --nproc N`, what torchrun does
// for one node: start N copies of this program, one rank each, hand them the NCCL unique id
// (hex, in an environment variable), watch them, and when one fails tell the others, wait a
// bounded time for them to stop, and kill the stragglers.
//
//   LaunchResult r = launch_workers(self_path(), worker_args, 4, id_hex, /*timeout_s=*/30, std::cerr);
//   if (r.first_failure) ...   // which rank failed first, and how
//
// A worker finds its rank with worker_identity_from_environment() and listens on its
// ControlChannel (a pipe from the launcher) while it waits for the GPU.
#pragma once

#include "plan.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// The variables the launcher sets for each worker.
inline constexpr const char* kRankVariable = "WORKBOOK_DDP_RANK";
inline constexpr const char* kWorldSizeVariable = "WORKBOOK_DDP_WORLD_SIZE";
inline constexpr const char* kLocalRankVariable = "WORKBOOK_DDP_LOCAL_RANK";
inline constexpr const char* kNcclIdVariable = "WORKBOOK_NCCL_ID";
inline constexpr const char* kControlFdVariable = "WORKBOOK_DDP_CONTROL_FD";

// Set in every worker's environment whatever the parent had: NVLink multicast (NVLS) stays off,
// because a program that uses it can take a shared host's GPUs out of service.
std::vector<std::pair<std::string, std::string>> forced_environment();

struct WorkerIdentity {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string nccl_id_hex;
  int control_fd = -1;  // -1: no launcher pipe (e.g. started by hand)
};

// nullopt when kRankVariable is not set (not a worker); throws std::invalid_argument naming the
// variable when one is malformed or inconsistent (rank >= world size, missing id).
std::optional<WorkerIdentity> worker_identity_from_environment(EnvLookup getenv_fn);

// The worker's environment: `parent` ("NAME=value" entries) minus any earlier worker variables,
// plus the identity and forced_environment(), each exactly once.
std::vector<std::string> worker_environment(const std::vector<std::string>& parent, const WorkerIdentity& identity);

// This process's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

// /proc/self/exe: the program to start again for each worker.
std::string self_path();

struct ChildExit {
  int rank = 0;
  int status = 0;           // exit status, or 128 + signal number
  bool killed = false;      // killed by the launcher after the bound
  double seconds = 0.0;     // since the launch
};

struct LaunchResult {
  std::vector<ChildExit> exits;            // in the order the launcher saw them
  std::optional<ChildExit> first_failure;  // the first child to exit non-zero (or be killed)
  bool ok() const { return !first_failure; }
};

// "exit status 1", "signal 9 (Killed)", "killed by the launcher after the 30 s bound".
std::string describe_exit(const ChildExit& e);

// Starts `nproc` copies of `program` with `args` (argv[1..]), rank r with the identity of rank r
// of nproc. Waits for all. After the first failure, writes "rank R failed: <how>" to every
// other worker's control pipe, waits at most `timeout_s` more, then SIGKILLs those still running.
// Progress lines go to `log`.
LaunchResult launch_workers(const std::string& program, const std::vector<std::string>& args, int nproc,
                            const std::string& nccl_id_hex, double timeout_s, std::ostream& log);

// The worker's end of the launcher's pipe. poll() never blocks: nullopt while nothing has
// arrived, else the launcher's message (or a note that the launcher is gone: the pipe closed).
class ControlChannel {
 public:
  explicit ControlChannel(int fd) : fd_(fd) {}
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;
  std::optional<std::string> poll();

 private:
  int fd_ = -1;
  std::string buffer_;
  std::optional<std::string> message_;
};

}  // namespace workbook::multi_gpu

// nccl_comm.h: an owner of one NCCL communicator, and waits that never hang.
//
//   Watch watch{30.0, &control, "rank 1"};                         // bound, launcher pipe, name
//   Communicator comm = Communicator::init_rank(id, ranks, rank, watch);   // blocks until all joined
//   comm.call(ncclAllReduce(buf, buf, 3, ncclFloat, ncclSum, comm.get(), stream), "all-reduce", watch);
//   comm.wait_event(epoch_done, "epoch 7", watch);   // polls the GPU, NCCL's async error, the pipe
//   comm.finalize(watch);                             // flush, then destroy
//
//   CommunicatorGroup all = CommunicatorGroup::init_all({0, 1, 2, 3});   // one process, 4 GPUs
//   ... ncclGroupStart(); ncclAllReduce(..., all.get(d), ...) per device; ncclGroupEnd(); ...
//   all.finalize();                                    // grouped finalize, then destroy each
//
// When a peer rank dies, its partners' all-reduce kernels spin forever on the GPU and only
// ncclCommAbort from the host stops them; so every wait here polls an event, NCCL's asynchronous
// error, the launcher's pipe and a clock, and gives up by aborting (the README's "Waits that
// never hang" says why, and what a blocking communicator still waits for inside NCCL).
#pragma once

#include "rank_environment.h"
#include "nccl_check.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace workbook::multi_gpu {

struct Watch {
  double timeout_s = 30.0;           // the longest wait without progress
  ControlChannel* control = nullptr;  // the launcher's pipe, if any
  std::string who = "rank 0";         // names this process in messages
};

class CommunicatorAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The unique id as 256 hex characters, and back (throws std::invalid_argument).
std::string encode_unique_id(const ncclUniqueId& id);
ncclUniqueId decode_unique_id(const std::string& hex);

class Communicator {
 public:
  Communicator() = default;
  // Owns a communicator made elsewhere (ncclCommInitAll ones belong in a CommunicatorGroup).
  explicit Communicator(ncclComm_t comm) : comm_(comm) {}
  // Rank `rank` of `ranks` on the current device. `nonblocking`: ncclConfig_t::blocking = 0, and the
  // init is waited for under `watch`; otherwise ncclCommInitRankConfig returns when all joined.
  static Communicator init_rank(const ncclUniqueId& id, int ranks, int rank, const Watch& watch,
                                bool nonblocking = false);

  ~Communicator() { abort(); }
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  ncclComm_t get() const { return comm_; }
  ncclComm_t release() noexcept { return std::exchange(comm_, nullptr); }  // the caller destroys it

  // Checks the result of an NCCL call on this communicator: ncclSuccess goes on, ncclInProgress
  // waits under `watch` until the call is done, anything else aborts and throws.
  void call(ncclResult_t result, const std::string& what, const Watch& watch);
  // Waits until `event` has completed on the GPU, polling as described above.
  void wait_event(cudaEvent_t event, const std::string& what, const Watch& watch);
  // ncclCommFinalize, then ncclCommDestroy. Call it after the last wait_event: a blocking
  // communicator's finalize then only flushes this rank's own NCCL work.
  void finalize(const Watch& watch);
  // Stops every operation in flight and frees the communicator; never throws.
  void abort() noexcept;

  // The hooks of an exchange that waits on the GPU without NCCL (one_shot_exchange.h): abort()
  // runs `on_abort` first (it sets the flag such a kernel polls, so that the kernel returns
  // before ncclCommAbort), and every wait asks `failure` at each turn: a line it returns (the GPU
  // gave up waiting for a peer, naming it) fails the wait like an error of NCCL's.
  using FailureProbe = std::function<std::optional<std::string>()>;
  void watch_exchange(std::function<void()> on_abort, FailureProbe failure);

 private:
  // Aborts and throws CommunicatorAborted(why); a teardown still stuck on the GPU a few seconds
  // later ends the process instead, with the same line (a kernel that ignores the abort).
  [[noreturn]] void fail(const Watch& watch, const std::string& why);
  void wait_ready(const std::string& what, const Watch& watch);
  // The two checks every wait repeats: NCCL's asynchronous state (fails on an error, returns
  // ncclSuccess or ncclInProgress), and the launcher's stop message or the deadline (fails).
  ncclResult_t async_state(const std::string& what, const Watch& watch);
  void check_stop(const std::string& what, const Watch& watch, std::chrono::steady_clock::time_point deadline);
  void check_exchange(const std::string& what, const Watch& watch);

  ncclComm_t comm_ = nullptr;
  std::function<void()> on_abort_;
  FailureProbe exchange_failure_;
};

// The communicators of ncclCommInitAll: one per device, all driven by this thread, blocking.
// finalize() is the orderly end: ncclCommFinalize of every one inside one group (one thread
// drives them all, so each finalize must not wait for its peers alone), then ncclCommDestroy of
// each. The destructor of a group that was not finalized (an exception left the scope, possibly
// with collectives still queued) calls ncclCommAbort on each instead.
class CommunicatorGroup {
 public:
  // Requires forced_environment() in effect (throws otherwise), then ncclCommInitAll.
  static CommunicatorGroup init_all(const std::vector<int>& devices);

  CommunicatorGroup() = default;
  ~CommunicatorGroup() { abort(); }
  CommunicatorGroup(CommunicatorGroup&& other) noexcept
      : comms_(std::exchange(other.comms_, {})), on_abort_(std::move(other.on_abort_)) {}
  CommunicatorGroup& operator=(CommunicatorGroup&& other) noexcept;
  CommunicatorGroup(const CommunicatorGroup&) = delete;
  CommunicatorGroup& operator=(const CommunicatorGroup&) = delete;

  ncclComm_t get(std::size_t i) const { return comms_.at(i); }
  std::size_t size() const { return comms_.size(); }
  // Grouped ncclCommFinalize, then ncclCommDestroy of each; throws NcclError on failure (after
  // aborting what is left).
  void finalize();
  // ncclCommAbort of each; never throws. Runs `on_abort` first, as Communicator's does.
  void abort() noexcept;
  void on_abort(std::function<void()> hook) { on_abort_ = std::move(hook); }

 private:
  std::vector<ncclComm_t> comms_;
  std::function<void()> on_abort_;
};

}  // namespace workbook::multi_gpu

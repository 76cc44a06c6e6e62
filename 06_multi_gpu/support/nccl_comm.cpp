// nccl_comm.cpp: communicators (blocking or not), bounded waits, abort, and the unique id as hex.
#include "nccl_comm.h"

#include "cuda_check.h"
#include "exit_codes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>
#include <utility>

namespace workbook::multi_gpu {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds(double s) {
  std::ostringstream text;
  text << s << " s";
  return text.str();
}

// The last resort of a rank that has decided to stop. ncclCommAbort stops NCCL's kernels by a flag
// they poll, but a kernel that never polls it (the symmetric kernels of NCCL before 2.29.7 do
// not) keeps waiting for the dead peer, and the teardown's next cudaFree waits for that kernel.
// Nothing on the host can cancel a running kernel; ending the process can. So, as PyTorch's NCCL
// watchdog does (TORCH_NCCL_ASYNC_ERROR_HANDLING), a thread gives the teardown `grace_s` and then
// prints why and ends the process. An orderly exit before then ends the thread with it.
constexpr double kLastResortS = 5.0;

void exit_if_still_here(double grace_s, const std::string& why) noexcept {
  try {
    std::thread([grace_s, why] {
      std::this_thread::sleep_for(std::chrono::duration<double>(grace_s));
      std::fprintf(stderr, "error: %s; the teardown was still running after %g s (most likely a GPU kernel that "
                   "ignores the abort): exiting\n", why.c_str(), grace_s);
      std::_Exit(kExitFailure);
    }).detach();
  } catch (...) {  // no thread (resources): the teardown goes on without its last resort
  }
}

std::string last_error_text(ncclComm_t comm) {
  const char* text = ncclGetLastError(comm);
  return text != nullptr && *text != '\0' ? std::string(": ") + text : std::string();
}

// The pause between two polls of both wait loops. A collective of a training epoch is ready within
// microseconds, so for the first 2 ms the host only yields: a sleep of even 100 us there would add
// 100 us to every epoch. Past that something is slow (a peer is late or gone), and polling every
// 100 us keeps the waiting rank from burning a core while the deadline runs.
void pause_between_polls(Clock::time_point waiting_since) {
  if (Clock::now() - waiting_since < std::chrono::milliseconds(2)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

std::string encode_unique_id(const ncclUniqueId& id) { return to_hex(id.internal, sizeof id.internal); }

ncclUniqueId decode_unique_id(const std::string& hex) {
  ncclUniqueId id;
  from_hex(hex, id.internal, sizeof id.internal);
  return id;
}

Communicator Communicator::init_rank(const ncclUniqueId& id, int ranks, int rank, const Watch& watch,
                                     bool nonblocking) {
  require_forced_environment();  // multicast off before NCCL builds anything (rank_environment.h)
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = nonblocking ? 0 : 1;  // see the header: blocking or not
  Communicator c;
  const ncclResult_t result = ncclCommInitRankConfig(&c.comm_, ranks, id, rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    const std::string why = watch.who + ": ncclCommInitRankConfig failed: " + ncclGetErrorString(result) +
                            last_error_text(c.comm_);
    c.abort();
    throw NcclError(result, why);
  }
  c.wait_ready("communicator init (waiting for every rank to join)", watch);
  return c;
}

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)),
      on_abort_(std::move(other.on_abort_)),
      exchange_failure_(std::move(other.exchange_failure_)) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    abort();
    comm_ = std::exchange(other.comm_, nullptr);
    on_abort_ = std::move(other.on_abort_);
    exchange_failure_ = std::move(other.exchange_failure_);
  }
  return *this;
}

void Communicator::abort() noexcept {
  if (on_abort_) on_abort_();  // a kernel waiting for a peer on the GPU returns first
  if (comm_ != nullptr) (void)ncclCommAbort(std::exchange(comm_, nullptr));
}

void Communicator::watch_exchange(std::function<void()> on_abort, FailureProbe failure) {
  on_abort_ = std::move(on_abort);
  exchange_failure_ = std::move(failure);
}

void Communicator::check_exchange(const std::string& what, const Watch& watch) {
  if (!exchange_failure_) return;
  if (auto line = exchange_failure_()) fail(watch, watch.who + ": " + what + ": " + *line);
}

void Communicator::fail(const Watch& watch, const std::string& why) {
  exit_if_still_here(std::min(kLastResortS, 0.5 * watch.timeout_s), why);
  abort();  // stops this rank's NCCL kernels that would otherwise wait for the peer forever
  throw CommunicatorAborted(why + "; communicator aborted");
}

// Polls until the communicator has no operation in progress. Each loop: NCCL's asynchronous
// state, then the launcher's pipe, then the clock.
void Communicator::wait_ready(const std::string& what, const Watch& watch) {
  const auto since = Clock::now();
  const auto deadline = deadline_after(watch.timeout_s);
  while (true) {
    if (watch.control != nullptr) watch.control->heartbeat();  // alive, whether or not it is waiting
    if (async_state(what, watch) == ncclSuccess) return;
    check_stop(what, watch, deadline);
    pause_between_polls(since);
  }
}

ncclResult_t Communicator::async_state(const std::string& what, const Watch& watch) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
  if (queried != ncclSuccess) state = queried;
  if (state != ncclSuccess && state != ncclInProgress) {
    fail(watch, watch.who + ": " + what + ": NCCL reports " + ncclGetErrorString(state) + last_error_text(comm_));
  }
  return state;
}

void Communicator::check_stop(const std::string& what, const Watch& watch, Clock::time_point deadline) {
  if (watch.control != nullptr) {
    if (auto message = watch.control->poll()) fail(watch, watch.who + ": stopping in " + what + ": " + *message);
  }
  if (Clock::now() > deadline) {
    fail(watch, watch.who + ": no progress for " + seconds(watch.timeout_s) + " in " + what +
         " (a peer rank failed or hangs)");
  }
}

void Communicator::call(ncclResult_t result, const std::string& what, const Watch& watch) {
  if (result == ncclSuccess) return;
  if (result == ncclInProgress) return wait_ready(what, watch);
  fail(watch, watch.who + ": " + what + " failed: " + ncclGetErrorString(result) + last_error_text(comm_));
}

void Communicator::wait_event(cudaEvent_t event, const std::string& what, const Watch& watch) {
  const auto since = Clock::now();
  const auto deadline = deadline_after(watch.timeout_s);
  while (true) {
    if (watch.control != nullptr) watch.control->heartbeat();
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return check_exchange(what, watch);  // done, but did its waits give up?
    if (status != cudaErrorNotReady) CUDA_CHECK(status);
    (void)async_state(what, watch);
    check_exchange(what, watch);
    check_stop(what, watch, deadline);
    pause_between_polls(since);
  }
}

void Communicator::finalize(const Watch& watch) {
  if (comm_ == nullptr) return;
  call(ncclCommFinalize(comm_), "communicator finalize", watch);
  wait_ready("communicator finalize", watch);
  NCCL_CHECK(ncclCommDestroy(std::exchange(comm_, nullptr)));
}

CommunicatorGroup CommunicatorGroup::init_all(const std::vector<int>& devices) {
  require_forced_environment();  // multicast off before NCCL builds anything (rank_environment.h)
  CommunicatorGroup g;
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  g.comms_ = std::move(comms);
  return g;
}

CommunicatorGroup& CommunicatorGroup::operator=(CommunicatorGroup&& other) noexcept {
  if (this != &other) {
    abort();
    comms_ = std::exchange(other.comms_, {});
    on_abort_ = std::move(other.on_abort_);
  }
  return *this;
}

void CommunicatorGroup::finalize() {
  if (comms_.empty()) return;
  try {
    NCCL_CHECK(ncclGroupStart());
    for (ncclComm_t c : comms_) NCCL_CHECK(ncclCommFinalize(c));
    NCCL_CHECK(ncclGroupEnd());  // blocking communicators: returns when every one is quiescent
  } catch (...) {
    abort();
    throw;
  }
  // Finalized: each destroy now frees local resources only.
  std::vector<ncclComm_t> comms = std::exchange(comms_, {});
  ncclResult_t first_destroy_error = ncclSuccess;
  for (ncclComm_t c : comms) {
    const ncclResult_t r = ncclCommDestroy(c);
    if (first_destroy_error == ncclSuccess) first_destroy_error = r;
  }
  NCCL_CHECK(first_destroy_error);
}

void CommunicatorGroup::abort() noexcept {
  if (on_abort_ && !comms_.empty()) on_abort_();
  for (ncclComm_t c : std::exchange(comms_, {})) {
    if (c != nullptr) (void)ncclCommAbort(c);
  }
}

}  // namespace workbook::multi_gpu

// symmetric_windows.h: the gradient buffer as an NCCL symmetric window (NCCL 2.27 and newer).
//
//   SymmetricWindows w = SymmetricWindows::register_group(comms, devices);       // one process
//   SymmetricWindows w = SymmetricWindows::register_rank(comm, stream, watch);   // one per rank
//   if (w.active()) replica.use_sums_buffer(w.buffer(i));   // the all-reduce runs on the window
//   std::cout << w.note();                                   // registered, or why not
//   w.close();                                               // before the communicators' finalize
//
// Each rank's buffer comes from ncclMemAlloc (cuMem memory NCCL can map into its peers) and is
// registered with ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC), a collective call: every
// rank registers a buffer of the same size, and NCCL maps every rank's buffer into every other
// rank. A collective whose buffers lie in such windows may then run NCCL's symmetric kernels,
// which read and write the peers' buffers directly instead of going through NCCL's own staging
// buffers and protocol steps: the low-latency path for small all-reduces.
//
// Where NCCL declines (headers or library older than 2.27, no cuMem, a communicator without
// symmetric support, a failed registration), active() is false, note() says why in one line,
// and the caller keeps the stock buffer: the run is the same, only slower. In one process per
// GPU the ranks agree first (an all-reduce of "I have a window"), so all of them take one path.
#pragma once

#include "support/nccl_comm.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

class SymmetricWindows {
 public:
  // One window per communicator of `comms` (devices[i] is comms.get(i)'s), registered inside one
  // ncclGroupStart/End: this one thread stands for every rank of the collective call.
  static SymmetricWindows register_group(CommunicatorGroup& comms, const std::vector<int>& devices);
  // This rank's window on the current device; the registration waits inside NCCL for every rank.
  static SymmetricWindows register_rank(Communicator& comm, cudaStream_t stream, const Watch& watch);

  SymmetricWindows() = default;
  // Not closed (an exception left the scope): aborts the communicators first (which drops their
  // registrations and stops their kernels), then frees the buffers. Never throws.
  ~SymmetricWindows();
  SymmetricWindows(SymmetricWindows&& other) noexcept;
  SymmetricWindows& operator=(SymmetricWindows&& other) noexcept;
  SymmetricWindows(const SymmetricWindows&) = delete;
  SymmetricWindows& operator=(const SymmetricWindows&) = delete;

  bool active() const { return active_; }
  float* buffer(std::size_t i) const;  // 3 floats at the start of window i; only while active()
  const std::string& note() const { return note_; }
  // Deregisters every window (grouped), frees the buffers. After the last collective that uses
  // them, before the communicators' finalize. Throws NcclError on failure.
  void close();

  static constexpr std::size_t kBytes = 4096;  // NCCL_WIN_REQUIRED_ALIGNMENT: one page per rank

 private:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  using WindowHandle = ncclWindow_t;
#else
  using WindowHandle = void*;  // headers without windows: never registered
#endif
  struct Window {
    int device = 0;
    ncclComm_t comm = nullptr;
    void* buffer = nullptr;          // from ncclMemAlloc
    WindowHandle window = nullptr;   // null when NCCL registered none
  };
  void settle(const std::string& why);  // active when `why` is empty; else the note, and back
  void release(bool deregister) noexcept;

  std::vector<Window> windows_;
  std::function<void()> abort_communicators_;
  std::string note_;
  bool active_ = false;
};

}  // namespace workbook::multi_gpu

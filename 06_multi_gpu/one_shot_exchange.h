// one_shot_exchange.h: the gradient exchange written by hand, host side (g++ compiles this
// header; the device code is one_shot_exchange.cuh). NCCL's all-reduce of 12 bytes is a chain of
// generic steps that costs several microseconds; one NVLink write costs one or two. So each GPU
// writes its three sums into a slot of EVERY GPU's mailbox, waits until every slot of its own
// holds this exchange's sums, and adds them in rank order 0..N-1: the same bits everywhere.
//
//   OneShotMailbox box(world, rank, /*timeout_s=*/30.0);   // on the current device, zeroed
//   box.connect(mailboxes);                // one process: every GPU's box.local(), peer access on
//   connect_over_nccl(box, comm, stream, watch);            // one process per GPU: CUDA IPC handles
//   enqueue_epoch_one_shot(replica.view(), box, epoch);    // by_hand.h: sums, exchange, step in one kernel
//   if (auto why = box.failure(epochs)) ...                 // a peer never came: one line
//
// The mailbox: 2 sets of `world` slots, set = exchange & 1; slot r is written by rank r only. A
// slot is three 8-byte words, one per sum: the float's bits in the low half, the exchange's number
// in the high half (as NCCL's LL protocol). An aligned 8-byte store arrives whole, so a word with
// this exchange's number holds its sum: no fence, no flag, nothing to reset (the numbers only
// grow). The second set lets a fast rank write exchange s+1 while a slow one reads s. The number
// is a counter in GPU memory, so a CUDA graph of the loop replays correctly. One warp does it all.
//
// A peer that never writes must not hang the others: once a peer is late, the wait reads the
// clock and the host's abort flag, gives up after `timeout_s` (or at once after abort()), and
// records which rank it waited for (ExchangeSignals, support/exchange.h); the host makes that one line.
#pragma once

#include "device_buffer.h"
#include "support/exchange.h"
#include "support/nccl_comm.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

struct MailboxSlot {
  unsigned long long word[3];  // sum k: its float bits | the exchange's number << 32 (0: none yet)
};
static_assert(sizeof(MailboxSlot) == 24, "one slot is three 8-byte words");

inline constexpr int kMaxOneShotRanks = 8;  // one node's GPUs
inline constexpr const char* kOneShotNote = "one_shot: each GPU writes its sums into a slot of every GPU's mailbox";

// What a kernel needs to publish and to gather; passed by value (a kernel parameter).
struct OneShotView {
  MailboxSlot* mailboxes[kMaxOneShotRanks] = {};  // rank r's mailbox as this GPU addresses it
  MailboxSlot* mine = nullptr;                     // == mailboxes[rank], in this GPU's memory
  unsigned* counters = nullptr;  // device memory, 8-byte aligned: [0] exchanges done, [1] nonzero once a wait gave up (sticky)
  ExchangeSignals* signals = nullptr;              // pinned host memory, as the GPU addresses it
  int world = 1;
  int rank = 0;
  unsigned long long timeout_ns = 0;
};

class OneShotMailbox {
 public:
  // On the current device: 2 * world zeroed slots, the counters, the pinned signals.
  // world is 1 to kMaxOneShotRanks; a one-rank mailbox is connected already (to itself).
  OneShotMailbox(int world, int rank, double timeout_s);
  // Sets the abort flag, waits for this device's work (a waiting kernel returns at once), closes
  // the peers' IPC mappings and frees. Destroy it after the communicator has been aborted or
  // finalized (declare it first): NCCL kernels that wait for a dead peer stop only then.
  ~OneShotMailbox();
  OneShotMailbox(const OneShotMailbox&) = delete;
  OneShotMailbox& operator=(const OneShotMailbox&) = delete;

  MailboxSlot* local() const { return view_.mine; }
  int world() const { return view_.world; }
  int rank() const { return view_.rank; }

  // One process: rank r's mailbox is mailboxes[r] (its local() pointer; peer access enabled).
  void connect(const std::vector<MailboxSlot*>& mailboxes);
  // One process per GPU: this mailbox's handle for the others, and theirs opened here
  // (cudaIpcOpenMemHandle with lazy peer access). handles[rank] is ignored.
  cudaIpcMemHandle_t ipc_handle() const;
  void connect_ipc(const std::vector<cudaIpcMemHandle_t>& handles);
  // Closes the IPC mappings (before the last collective, so that no rank frees its mailbox while
  // another still maps it). Throws on failure; the destructor does it quietly.
  void disconnect();

  // For the kernels; throws std::logic_error before connect.
  const OneShotView& view() const;
  ExchangeSignals* signals() const { return signals_.get(); }
  double timeout_s() const { return timeout_s_; }

  // One line when a wait gave up (see exchange_failure; epochs_per_run 0: outside training),
  // nullopt otherwise. Safe at any time.
  std::optional<std::string> failure(int epochs_per_run) const;
  // Throws std::runtime_error("<who>: <that line>") when a wait gave up.
  void throw_if_failed(const std::string& who, int epochs_per_run) const;
  // Makes every wait on this mailbox return within microseconds; never throws.
  void abort() noexcept;
  // Waits for every kernel of this mailbox's GPU (abort first, or a wait may last its timeout).
  void drain() noexcept;

 private:
  struct FreePinned {
    void operator()(ExchangeSignals* p) const noexcept;
  };
  void close_mappings() noexcept;

  int device_ = 0;
  double timeout_s_ = 30.0;
  DeviceBuffer<MailboxSlot> slots_;  // [set][rank]
  DeviceBuffer<unsigned> counters_;  // [0] sequence, [1] failed
  std::unique_ptr<ExchangeSignals, FreePinned> signals_;
  std::vector<void*> opened_;  // IPC mappings of the peers' mailboxes
  OneShotView view_;
  bool connected_ = false;
};

// One process per GPU: the 64-byte IPC handles of every rank's mailbox all-gathered over `comm`
// (waited for under `watch`), then opened: box.connect_ipc.
void connect_over_nccl(OneShotMailbox& box, Communicator& comm, cudaStream_t stream, const Watch& watch);

// The exchange alone (the training fuses it into its kernels; by_hand.cu uses it for the test
// sums, the bench times it): publish `sums` (3 floats on this device) to every peer's mailbox,
// wait for every peer's slot of this exchange and write the sum of all ranks' sums, added in rank
// order, to `total` (3 floats; it may be `sums`). One kernel of one warp.
void launch_one_shot_exchange(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream);

}  // namespace workbook::multi_gpu

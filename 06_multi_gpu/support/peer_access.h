// peer_access.h: what the hand-written exchange (one_shot_exchange.h) needs in one process driving
// several GPUs: peer access between them for the life of an object (to write into another GPU's
// memory), and the order in which their mailboxes go.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>
#include <vector>

namespace workbook::multi_gpu {

// Peer access both ways between every pair of `devices` (cudaDeviceEnablePeerAccess), for the
// life of the object: what the one-process exchange needs to write into another GPU's memory.
// Throws, naming the pair, where cudaDeviceCanAccessPeer says no. Disables only what it enabled.
class PeerAccess {
 public:
  PeerAccess() = default;
  explicit PeerAccess(const std::vector<int>& devices);
  ~PeerAccess();
  PeerAccess(PeerAccess&& other) noexcept : enabled_(std::exchange(other.enabled_, {})) {}
  PeerAccess& operator=(PeerAccess&& other) noexcept;
  PeerAccess(const PeerAccess&) = delete;
  PeerAccess& operator=(const PeerAccess&) = delete;

 private:
  void disable() noexcept;
  std::vector<std::pair<int, int>> enabled_;  // (from, to)
};

// One process driving several GPUs (dp, the bench): a mailbox's destructor drains only its own GPU,
// and a peer still running its sums kernel could then publish into the freed slots. Declared after
// the owners (structs with a `mailbox` member), this runs first: every mailbox aborted, then every
// GPU drained, and only then does any mailbox go.
template <class Owners>
class DrainMailboxesFirst {
 public:
  explicit DrainMailboxesFirst(Owners& owners) : owners_(owners) {}
  ~DrainMailboxesFirst() {
    for (auto& o : owners_) if (o.mailbox) o.mailbox->abort();
    for (auto& o : owners_) if (o.mailbox) o.mailbox->drain();
  }
  DrainMailboxesFirst(const DrainMailboxesFirst&) = delete;
  DrainMailboxesFirst& operator=(const DrainMailboxesFirst&) = delete;

 private:
  Owners& owners_;
};

}  // namespace workbook::multi_gpu

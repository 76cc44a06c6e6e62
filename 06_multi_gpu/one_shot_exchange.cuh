// one_shot_exchange.cuh: the device half of the hand-written exchange (one_shot_exchange.h says
// what the mailbox is). Two functions, each run by ONE thread:
//
//   one_shot_publish  this rank's 3 sums into its slot of every rank's mailbox (NVLink writes
//                     for the peers), a system-wide fence, then the tag into each slot
//   one_shot_gather   wait until every slot of this exchange's set carries its tag, add the slots
//                     in rank order 0..N-1, advance the exchange counter
//
// replica.cu calls publish at the end of the sums kernel (its last block, once the sums are
// known) and gather at the start of the step kernel: the exchange costs no kernel of its own.
// CUDA only.
#pragma once

#include "globaltimer.cuh"
#include "one_shot_exchange.h"

#include <cuda/atomic>

namespace workbook::multi_gpu {

// How often a waiting kernel looks at the host's abort flag and at its clock. Those are reads of
// host memory over PCIe (about a microsecond each), so a healthy exchange, which waits a few
// microseconds at most, never makes one.
inline constexpr unsigned long long kLookAtHostNs = 20'000;

using SystemTag = cuda::atomic_ref<unsigned, cuda::thread_scope_system>;

__device__ __forceinline__ void one_shot_publish(const OneShotView& v, float rr, float rx, float r) {
  if (*v.failed != 0) return;  // this GPU gave up on a peer: leave the peers' memory alone (one may be gone)
  const unsigned s = *v.sequence + 1;  // this exchange's number: the tag the readers wait for
  const int set = static_cast<int>(s & 1u) * v.world;
#pragma unroll
  for (int p = 0; p < kMaxOneShotRanks; ++p) {  // the data first, to every rank (mine too)
    if (p < v.world) {
      MailboxSlot* slot = v.mailboxes[p] + set + v.rank;
      slot->sums[0] = rr;
      slot->sums[1] = rx;
      slot->sums[2] = r;
    }
  }
  // Release: every rank that sees a tag below sees the data above (system scope: the readers are
  // other GPUs, reached over NVLink).
  __threadfence_system();
#pragma unroll
  for (int p = 0; p < kMaxOneShotRanks; ++p) {
    if (p < v.world) SystemTag(v.mailboxes[p][set + v.rank].tag).store(s, cuda::memory_order_relaxed);
  }
}

// Records why a wait gave up: the sticky flag in device memory (later waits return at once), then
// the rank and exchange for the host, the code last.
__device__ __forceinline__ void one_shot_give_up(const OneShotView& v, unsigned code, int rank, unsigned s) {
  *v.failed = code;
  volatile ExchangeSignals* host = v.signals;
  host->rank = rank;
  host->sequence = s;
  __threadfence_system();
  host->code = code;
}

// Returns false (and `total` unset) when the wait gave up, now or in an earlier exchange.
__device__ __forceinline__ bool one_shot_gather(const OneShotView& v, float total[3]) {
  if (*v.failed != 0) return false;
  const unsigned s = *v.sequence + 1;
  MailboxSlot* set = v.mine + static_cast<int>(s & 1u) * v.world;
  const unsigned long long start = global_timer_ns();
  unsigned long long next_look = start + kLookAtHostNs;
  for (int r = 0; r < v.world; ++r) {
    // Acquire, system scope: once rank r's tag reads s, its floats (written before its fence) do too.
    while (SystemTag(set[r].tag).load(cuda::memory_order_acquire) != s) {
      const unsigned long long now = global_timer_ns();
      if (now < next_look) continue;
      next_look = now + kLookAtHostNs;
      const bool aborted = static_cast<volatile ExchangeSignals*>(v.signals)->abort != 0;
      if (aborted || now - start > v.timeout_ns) {
        one_shot_give_up(v, aborted ? kExchangeAborted : kExchangeTimedOut, r, s);
        return false;
      }
    }
  }
  // Every slot holds exchange s: add them in rank order. __ldcv reads past this SM's L1 (the
  // peers wrote these lines over NVLink since the last time this GPU read them).
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    float t = __ldcv(&set[0].sums[k]);
    for (int r = 1; r < v.world; ++r) t += __ldcv(&set[r].sums[k]);
    total[k] = t;
  }
  *v.sequence = s;  // this GPU's next publish and gather are exchange s + 1
  return true;
}

}  // namespace workbook::multi_gpu

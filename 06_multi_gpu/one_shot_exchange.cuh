// one_shot_exchange.cuh: the device half of the hand-written exchange (one_shot_exchange.h says
// what the mailbox is). Two functions, each run by ONE thread:
//
//   one_shot_publish  this rank's 3 sums, each in one 8-byte word with the exchange's number,
//                     into its slot of every rank's mailbox (NVLink writes for the peers)
//   one_shot_gather   wait until every word of this exchange's set carries its number, add the
//                     slots in rank order 0..N-1, advance the exchange counter
//
// replica.cu calls both from the last block of the epoch's kernel, between the sums and the step:
// the exchange costs no kernel of its own. CUDA only.
#pragma once

#include "globaltimer.cuh"
#include "one_shot_exchange.h"

#include <cuda/atomic>

namespace workbook::multi_gpu {

// A wait spins this many times on its own memory before it first reads the clock (a peer on time
// arrives within a few hundred spins), and from then on looks at the host's abort flag (a read of
// host memory over PCIe, about a microsecond) every kLookAtHostNs.
inline constexpr unsigned kSpinsBeforeClock = 4096;
inline constexpr unsigned long long kLookAtHostNs = 20'000;

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ __forceinline__ unsigned long long word_of(float sum, unsigned exchange) {
  return static_cast<unsigned long long>(exchange) << 32 | __float_as_uint(sum);
}

__device__ __forceinline__ void one_shot_publish(const OneShotView& v, float rr, float rx, float r) {
  if (*v.failed != 0) return;  // this GPU gave up on a peer: leave the peers' memory alone (one may be gone)
  const unsigned s = *v.sequence + 1;  // this exchange's number: what the readers wait for
  const int set = static_cast<int>(s & 1u) * v.world;
  const unsigned long long words[3] = {word_of(rr, s), word_of(rx, s), word_of(r, s)};
  // Release, system scope: this GPU's reads of the last exchange in this set (two exchanges ago)
  // are done before any peer can see these words and overwrite what was read.
  cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
#pragma unroll
  for (int p = 0; p < kMaxOneShotRanks; ++p) {
    if (p >= v.world) break;
    MailboxSlot* slot = v.mailboxes[p] + set + v.rank;
#pragma unroll
    for (int k = 0; k < 3; ++k) SystemWord(slot->word[k]).store(words[k], cuda::memory_order_relaxed);
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
  unsigned spins = 0;
  unsigned long long started = 0, next_look = 0;  // the clock, once a peer is late
  for (int r = 0; r < v.world; ++r) {
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      // Relaxed is enough: the sum travels in the same 8-byte word as the number that says it is
      // this exchange's, and an aligned 8-byte store is seen whole or not at all.
      unsigned long long word;
      while (static_cast<unsigned>((word = SystemWord(set[r].word[k]).load(cuda::memory_order_relaxed)) >> 32) != s) {
        if (++spins < kSpinsBeforeClock) continue;
        const unsigned long long now = global_timer_ns();
        if (started == 0) started = next_look = now;
        if (now < next_look) continue;
        next_look = now + kLookAtHostNs;
        const bool aborted = static_cast<volatile ExchangeSignals*>(v.signals)->abort != 0;
        if (aborted || now - started > v.timeout_ns) {
          one_shot_give_up(v, aborted ? kExchangeAborted : kExchangeTimedOut, r, s);
          return false;
        }
      }
      const float sum = __uint_as_float(static_cast<unsigned>(word));
      total[k] = r == 0 ? sum : total[k] + sum;  // rank order 0..N-1, the same on every GPU
    }
  }
  *v.sequence = s;  // this GPU's next publish and gather are exchange s + 1
  return true;
}

}  // namespace workbook::multi_gpu

// one_shot_exchange.cuh: the device half of the hand-written exchange (one_shot_exchange.h says
// what the mailbox is). Each function is run by ONE WARP, all 32 lanes together; lane l < 3 x
// world handles one word: rank l / 3's sum k = l % 3.
//
//   const unsigned s = one_shot_next(v);          // this exchange's number (0: a wait gave up before)
//   one_shot_publish(v, s, mine);                 // my 3 sums into my slot of every peer's mailbox
//   if (one_shot_gather(v, s, mine, total)) ...   // every rank's sums, added in rank order 0..N-1
//   one_shot_done(v, s);                          // lane 0: the next exchange is s + 1
//   one_shot_gather_into(v, s, mine, total);      // the gather, then thread 0 writes total and is done
//
// The fast path is one NVLink store per word and a spin on this GPU's own memory: no fence (a word
// carries its own exchange number; a slot is written again only two exchanges later, after its
// owner has read it), no host memory, no clock. CUDA only.
#pragma once

#include "globaltimer.cuh"
#include "one_shot_exchange.h"

#include <cuda/atomic>

namespace workbook::multi_gpu {

// A wait spins this many rounds on its own memory before it first reads the clock (a peer on
// time arrives within a few hundred), and from then on looks at the host's abort flag (a read of
// host memory over PCIe, about a microsecond) every kLookAtHostNs.
inline constexpr unsigned kSpinsBeforeClock = 4096;
inline constexpr unsigned long long kLookAtHostNs = 20'000;
inline constexpr unsigned kFullWarp = 0xffffffffu;

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ __forceinline__ unsigned long long word_of(float sum, unsigned exchange) {
  return static_cast<unsigned long long>(exchange) << 32 | __float_as_uint(sum);
}

// The number of this GPU's next exchange, or 0 when an earlier wait gave up (then leave the
// peers' memory alone: one may be gone). Both counters in one 8-byte load.
__device__ __forceinline__ unsigned one_shot_next(const OneShotView& v) {
  const uint2 c = *reinterpret_cast<const uint2*>(v.counters);  // {exchanges done, failed}
  return c.y != 0 ? 0u : c.x + 1;
}

// Lane 0, after a gather that succeeded: the next exchange on this GPU is s + 1.
__device__ __forceinline__ void one_shot_done(const OneShotView& v, unsigned s) { v.counters[0] = s; }

// Element i of a small array by a lane's own index, without indexing it at run time: indexed so,
// the array (a kernel parameter's, or a register array) would be copied to local memory by every
// thread of the kernel, even those that never exchange.
template <class T, int N>
__device__ __forceinline__ T pick(const T (&values)[N], int i) {
  T chosen = values[0];
#pragma unroll
  for (int j = 1; j < N; ++j) chosen = i == j ? values[j] : chosen;
  return chosen;
}

// Writes this rank's sums (mine[0..2], the same in every lane) into its slot of every peer's
// mailbox, set s & 1.
__device__ __forceinline__ void one_shot_publish(const OneShotView& v, unsigned s, const float (&mine)[3]) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int peer = lane / 3, k = lane % 3;
  if (s == 0 || peer >= v.world || peer == v.rank) return;
  MailboxSlot* slot = pick(v.mailboxes, peer) + static_cast<int>(s & 1u) * v.world + v.rank;
  SystemWord(slot->word[k]).store(word_of(pick(mine, k), s), cuda::memory_order_relaxed);
}

// Records why a wait gave up: the sticky flag in device memory (later waits return at once), then
// the rank and exchange for the host, the code last.
__device__ __forceinline__ void one_shot_give_up(const OneShotView& v, unsigned code, int rank, unsigned s) {
  v.counters[1] = code;
  volatile ExchangeSignals* host = v.signals;
  host->rank = rank;
  host->sequence = s;
  __threadfence_system();
  host->code = code;
}

// Waits until every peer's three words of exchange s are in this GPU's mailbox, then adds all
// ranks' sums in rank order 0..N-1 (this rank's own from `mine`), the same additions on every
// GPU. Returns false (total unset) when the wait gave up, now or earlier (s == 0).
__device__ __forceinline__ bool one_shot_gather(const OneShotView& v, unsigned s, const float (&mine)[3],
                                                float (&total)[3]) {
  if (s == 0) return false;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int peer = lane / 3, k = lane % 3;
  const bool waits = peer < v.world && peer != v.rank;
  const MailboxSlot* slot = v.mine + static_cast<int>(s & 1u) * v.world + peer;
  unsigned long long word = 0;
  bool ready = !waits;
  unsigned spins = 0;
  unsigned long long started = 0, next_look = 0;  // lane 0's clock, once a peer is late
  while (!__all_sync(kFullWarp, ready)) {
    if (!ready) {
      // Relaxed is enough: the sum travels in the same 8-byte word as the number that says it
      // is this exchange's.
      word = SystemWord(const_cast<unsigned long long&>(slot->word[k])).load(cuda::memory_order_relaxed);
      ready = static_cast<unsigned>(word >> 32) == s;
    }
    if (++spins < kSpinsBeforeClock) continue;
    unsigned verdict = 0;  // lane 0 decides for the warp: go on waiting (0), or give up and why
    if (lane == 0) {
      const unsigned long long now = global_timer_ns();
      if (started == 0) started = next_look = now;
      if (now >= next_look) {
        next_look = now + kLookAtHostNs;
        if (static_cast<volatile ExchangeSignals*>(v.signals)->abort != 0) verdict = kExchangeAborted;
        else if (now - started > v.timeout_ns) verdict = kExchangeTimedOut;
      }
    }
    verdict = __shfl_sync(kFullWarp, verdict, 0);
    if (verdict != 0) {
      const unsigned late = __ballot_sync(kFullWarp, !ready);
      if (lane == 0) one_shot_give_up(v, verdict, (__ffs(late) - 1) / 3, s);
      return false;
    }
  }
  const float value = waits ? __uint_as_float(static_cast<unsigned>(word)) : pick(mine, k);
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    float sum = 0.0f;
    for (int r = 0; r < v.world; ++r) {
      const float x = __shfl_sync(kFullWarp, value, 3 * r + j);
      sum = r == 0 ? x : sum + x;  // rank order 0..N-1, the same on every GPU
    }
    total[j] = sum;
  }
  return true;
}

// Every GPU's slot `s` added into `total`, written by thread 0, which then marks exchange `s` done;
// nothing is written when a wait failed (the mailbox's flags say why).
__device__ __forceinline__ void one_shot_gather_into(const OneShotView& v, unsigned s, const float (&mine)[3], float* total) {
  float t[3];
  if (!one_shot_gather(v, s, mine, t) || threadIdx.x != 0) return;
  one_shot_done(v, s);
  total[0] = t[0];
  total[1] = t[1];
  total[2] = t[2];
}

}  // namespace workbook::multi_gpu

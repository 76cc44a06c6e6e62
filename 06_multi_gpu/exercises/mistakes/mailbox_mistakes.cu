// Planted mistakes for exercise 06 mailbox: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "mailbox.h"

#include "cuda_check.h"
#include "one_shot_exchange.cuh"

namespace workbook::multi_gpu::exercise {
namespace {

__device__ int set_of(unsigned s) {
#if defined(PLANTED_ONE_SET)
  (void)s;
  return 0;  // one set: a fast rank's next exchange overwrites words a slow one has not read
#else
  return static_cast<int>(s & 1u);
#endif
}

__global__ void publish_kernel(const float* sums, OneShotView v) {
  const int lane = static_cast<int>(threadIdx.x), peer = lane / 3, k = lane % 3;
  const unsigned s = one_shot_next(v);
  if (s == 0 || peer >= v.world || peer == v.rank) return;
#if defined(PLANTED_OWN_SLOT)
  const int slot = peer;  // the reader's index, not the writer's
#else
  const int slot = v.rank;
#endif
#if defined(PLANTED_NO_NUMBER)
  const unsigned long long word = __float_as_uint(sums[k]);  // no exchange number beside the sum
#else
  const unsigned long long word = word_of(sums[k], s);
#endif
  SystemWord(pick(v.mailboxes, peer)[set_of(s) * v.world + slot].word[k]).store(word, cuda::memory_order_relaxed);
}

__global__ void gather_kernel(const float* sums, float* total, OneShotView v) {
  const int lane = static_cast<int>(threadIdx.x), peer = lane / 3, k = lane % 3;
  const unsigned s = one_shot_next(v);
  if (s == 0) return;
  const bool waits = peer < v.world && peer != v.rank;
#if defined(PLANTED_WRONG_BOX)
  MailboxSlot* box = pick(v.mailboxes, waits ? peer : v.rank);  // the peer's mailbox, not this GPU's own
#else
  MailboxSlot* box = v.mine;
#endif
  unsigned long long word = 0;
  bool ready = !waits;
  while (!__all_sync(kFullWarp, ready)) {
    if (ready) continue;
    word = SystemWord(box[set_of(s) * v.world + peer].word[k]).load(cuda::memory_order_relaxed);
#if defined(PLANTED_ANY_WORD)
    ready = word != 0;  // an older exchange's word is not zero either
#else
    ready = static_cast<unsigned>(word >> 32) == s;
#endif
  }
  const float value = waits ? __uint_as_float(static_cast<unsigned>(word)) : (lane < 3 * v.world ? sums[k] : 0.0f);
  float t[3];
  for (int j = 0; j < 3; ++j) {
#if defined(PLANTED_OWN_FIRST)
    float sum = __shfl_sync(kFullWarp, value, 3 * v.rank + j);  // its own first, then the peers
    for (int r = 0; r < v.world; ++r) {
      const float x = __shfl_sync(kFullWarp, value, 3 * r + j);
      if (r != v.rank) sum += x;
    }
#else
    float sum = 0.0f;
    for (int r = 0; r < v.world; ++r) {
      const float x = __shfl_sync(kFullWarp, value, 3 * r + j);
      sum = r == 0 ? x : sum + x;
    }
#endif
    t[j] = sum;
  }
  if (lane != 0) return;
  total[0] = t[0];
  total[1] = t[1];
  total[2] = t[2];
#if !defined(PLANTED_NOT_DONE)  // without it, the next exchange runs with this one's number again
  one_shot_done(v, s);
#endif
}

}  // namespace

void launch_publish(const float* sums, const OneShotMailbox& box, cudaStream_t stream) {
  publish_kernel<<<1, 32, 0, stream>>>(sums, box.view());
  CUDA_CHECK_LAUNCH();
}

void launch_gather(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream) {
  gather_kernel<<<1, 32, 0, stream>>>(sums, total, box.view());
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::multi_gpu::exercise

// Exercise 06 mailbox: the hand-written exchange's two halves, publish and gather, one warp each
// (the contract: mailbox.h).
//
// Write the two kernels below, delete the TODO(exercise) line, then check your attempt with
//   scripts/check-exercise.sh 06 mailbox           (one GPU is enough; two add a round trip over NVLink)
// The chapter's own answer is one_shot_publish and one_shot_gather in one_shot_exchange.cuh
// (launched by answers/mailbox_lesson.cu); write yours without calling them. The helpers there are yours to use: one_shot_next, one_shot_done,
// word_of, pick (an array element by a lane's index) and SystemWord (an 8-byte word that other
// GPUs write: load and store it through SystemWord(word).load/store(..., memory_order_relaxed)).
#include "mailbox.h"

#include "cuda_check.h"
#include "one_shot_exchange.cuh"

namespace workbook::multi_gpu::exercise {
namespace {

// TODO(exercise): both kernels start with s = one_shot_next(v) and do nothing when s == 0. Lane
// l < 3 x v.world handles rank l / 3's sum k = l % 3. publish: for each peer (not v.rank), store
// word_of(sums[k], s) into word k of slot v.rank of set s & 1 of pick(v.mailboxes, peer) (a set
// is v.world slots). gather: each lane of a peer loads word k of slot
// peer of set s & 1 of v.mine until its high half is s (the warp goes on when every lane is
// ready: __all_sync); then lane 3r + k holds rank r's sum k (its own rank's from sums), and the
// totals are added in rank order with __shfl_sync; thread 0 writes them and calls one_shot_done.
// Every lane of the warp, those past 3 x v.world and this rank's own included, must reach each
// __all_sync and __shfl_sync (with ready = true if it waits for nothing): no early return before.
// Hint: a word of an older exchange is not zero, so "nonzero" is not "ready"; and a + b + c in
// another order is other bits.
__global__ void publish_kernel(const float* sums, OneShotView v) {
  (void)sums;
  (void)v;
}

__global__ void gather_kernel(const float* sums, float* total, OneShotView v) {
  (void)sums;
  (void)total;
  (void)v;
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

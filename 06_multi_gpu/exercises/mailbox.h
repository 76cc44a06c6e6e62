// mailbox.h: the contract of exercise 06 mailbox (mailbox.cu holds the reader's attempt).
#pragma once

#include "one_shot_exchange.h"

#include <cuda_runtime_api.h>

namespace workbook::multi_gpu::exercise {

// The two halves of the one-shot exchange (one_shot_exchange.h explains the mailbox), each one
// kernel of one warp (32 threads) on `stream`, given box.view() as `v`. Each kernel works on
// exchange s = one_shot_next(v) (one_shot_exchange.cuh: the exchanges done on this GPU + 1, read
// in the kernel); s == 0 means an earlier wait gave up: then the kernel does nothing.
//
// publish: this rank's three sums (`sums`, 3 floats on this GPU) into its own slot, index
// v.rank, of set s & 1 of every PEER's mailbox (v.mailboxes[peer]): word k = word_of(sums[k], s),
// the sum's bits in the low half and s in the high half, one 8-byte store each.
//
// gather: waits until each peer's slot of set s & 1 in this GPU's own mailbox (v.mine) holds
// words of exchange s, then writes the sum of every rank's three sums to `total`, added in rank
// order 0, 1, ..., world - 1 (this rank's own from `sums`), so that every GPU gets the same bits;
// then counts exchange s done (one_shot_done). The wait may spin for ever: the checker stops it.
void launch_publish(const float* sums, const OneShotMailbox& box, cudaStream_t stream);
void launch_gather(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream);

}  // namespace workbook::multi_gpu::exercise

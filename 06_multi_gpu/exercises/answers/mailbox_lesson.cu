// The worked answer of exercise 06 mailbox: the lesson's own kernels (one_shot_publish and
// one_shot_gather of one_shot_exchange.cuh, launched by one_shot_exchange.cu) behind the
// exercise's signature (the checker's test: it must print "correct").
#include "mailbox.h"

namespace workbook::multi_gpu::exercise {

void launch_publish(const float* sums, const OneShotMailbox& box, cudaStream_t stream) {
  launch_one_shot_publish(sums, box, stream);
}

void launch_gather(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream) {
  launch_one_shot_gather(sums, total, box, stream);
}

}  // namespace workbook::multi_gpu::exercise

// The worked answer of exercise 04 forward: the lesson's own forward pass behind the exercise's
// signature (the checker's test: it must print "correct").
#include "forward.h"

#include "linear_regression.h"

namespace workbook::linear_regression::exercise {

void forward(const float* x, const float* params, float* pred, std::int64_t n, cudaStream_t stream) {
  launch_forward(x, params, pred, n, stream);
}

}  // namespace workbook::linear_regression::exercise

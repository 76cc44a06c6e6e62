// The worked answer of exercise 04 gradient: the lesson's own backward pass behind the exercise's
// signature (the checker's test: it must print "correct").
#include "gradient.h"

#include "linear_regression.h"

namespace workbook::linear_regression::exercise {

void mse_backward(const float* pred, const float* y, const float* x, std::int64_t n, float* partials, float* grads,
                  cudaStream_t stream) {
  launch_mse_backward(pred, y, x, n, partials, grads, stream);
}

}  // namespace workbook::linear_regression::exercise

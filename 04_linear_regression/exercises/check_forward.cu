// check_forward.cu: the checker of exercise 04 forward (the contract: forward.h).
//
// 1. Correct: at 1; a warp and one more; a block and one more; a few grids' worth of a capped
//    grid; the chapter's 5M points: every pred[i] against w * x[i] + b within 1e-6 relative, from
//    a pred filled with NaN, so that an element never written shows. A wrong one gets a hint
//    from where the wrong elements are and what they hold.
// 2. Clean: racecheck and memcheck over the small sizes (common/exercise.h).
// 3. Timed: the attempt against the lesson's launch_forward at 5M points.
#include "forward.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "linear_regression.h"
#include "program.h"
#include "splitmix64.h"
#include "stream.h"

#include <cmath>
#include <vector>

namespace workbook::linear_regression::exercise {
namespace {

constexpr double kTolerance = 1e-6;  // relative: w * x + b in float, with or without an FMA
constexpr std::int64_t kFullSize = 5'000'000;
constexpr float kW = 0.83f;  // the article's first w and b: params = {w, b}
constexpr float kB = 0.7645f;

std::vector<float> make_x(std::int64_t n) {
  std::vector<float> x(n);
  for (std::int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(splitmix64_of(static_cast<std::uint64_t>(i)) >> 40) * 0x1p-24f;
  return x;
}

bool right(float got, float x) {
  const double want = static_cast<double>(kW) * x + kB;
  return workbook::exercise::close(got, want, kTolerance);
}

// Where the first wrong element is, and what the wrong elements have in common.
std::string hint_for(const std::vector<float>& got, const std::vector<float>& x, std::int64_t first_wrong) {
  const auto n = static_cast<std::int64_t>(got.size());
  bool rest_unwritten = true;
  for (std::int64_t i = first_wrong; i < n && rest_unwritten; ++i) rest_unwritten = std::isnan(got[i]);
  if (rest_unwritten && first_wrong == n - 1) {
    return "the last element is never written: check the loop bound (i < n)";
  }
  if (rest_unwritten) {
    return format("pred[%lld] and every element after it are never written: the grid is capped, so each "
                  "thread must go on by gridDim.x * blockDim.x (a grid-stride loop) while i < n",
                  static_cast<long long>(first_wrong));
  }
  if (std::isnan(got[first_wrong])) return "some elements are never written: every i < n needs its thread";
  const double swapped = static_cast<double>(kB) * x[first_wrong] + kW;
  if (workbook::exercise::close(got[first_wrong], swapped, kTolerance)) {
    return "w and b are swapped: params[0] is w and params[1] is b";
  }
  return "the value is wrong: pred[i] = params[0] * x[i] + params[1]";
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("04", "forward");
  if (auto code = checker.parse(argc, argv)) return *code;
  Stream stream;
  DeviceBuffer<float> params(2);
  const float host_params[2] = {kW, kB};
  // Every copy goes on the checker's stream, ahead of the kernel that reads it: a plain cudaMemcpy
  // from pageable memory may return before its data has landed, and a non-blocking stream does
  // not wait for it.
  CUDA_CHECK(cudaMemcpyAsync(params.data(), host_params, sizeof(host_params), cudaMemcpyHostToDevice, stream.get()));

  // 1. Correct at every size, from a pred of NaN.
  const std::vector<std::int64_t> sizes = checker.sanitizer_pass()
                                              ? std::vector<std::int64_t>{1, 33, 257, 4099}
                                              : std::vector<std::int64_t>{1, 32, 33, 256, 257, 3'000'017, kFullSize};
  for (const std::int64_t n : sizes) {
    const std::vector<float> x = make_x(n);
    DeviceBuffer<float> d_x(n), d_pred(n);
    CUDA_CHECK(cudaMemcpyAsync(d_x.data(), x.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream.get()));
    CUDA_CHECK(cudaMemsetAsync(d_pred.data(), 0xFF, n * sizeof(float), stream.get()));
    forward(d_x.data(), params.data(), d_pred.data(), n, stream.get());
    std::vector<float> got(n);
    CUDA_CHECK(cudaMemcpyAsync(got.data(), d_pred.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (std::int64_t i = 0; i < n; ++i) {
      if (right(got[i], x[i])) continue;
      return checker.wrong(format("at n = %lld, pred[%lld] = %.9g where %.9g was expected", static_cast<long long>(n),
                                  static_cast<long long>(i), got[i], static_cast<double>(kW) * x[i] + kB),
                           hint_for(got, x, i));
    }
  }
  if (checker.sanitizer_pass()) return 0;

  // 2. Clean under racecheck and memcheck.
  const workbook::exercise::SanitizerHints hints{
      "threads of one block write the same element: each i belongs to one thread",
      "an access past the end of an array: guard the tail (i < n)"};
  if (auto code = checker.sanitize(hints)) return *code;

  // 3. Timed against the lesson's launch_forward, at the chapter's size.
  const std::vector<float> x = make_x(kFullSize);
  DeviceBuffer<float> d_x(kFullSize), d_pred(kFullSize);
  CUDA_CHECK(cudaMemcpyAsync(d_x.data(), x.data(), kFullSize * sizeof(float), cudaMemcpyHostToDevice, stream.get()));
  const Stats attempt = workbook::exercise::time_us(
      stream.get(), [&] { forward(d_x.data(), params.data(), d_pred.data(), kFullSize, stream.get()); });
  const Stats lesson = workbook::exercise::time_us(
      stream.get(), [&] { launch_forward(d_x.data(), params.data(), d_pred.data(), kFullSize, stream.get()); });
  return checker.correct(attempt, lesson, "the chapter's launch_forward at 5M points");
}

}  // namespace
}  // namespace workbook::linear_regression::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::linear_regression::exercise::run(argc, argv); });
}

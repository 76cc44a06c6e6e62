// check_gradient.cu: the checker of exercise 04 gradient (the contract: gradient.h).
//
// 1. Correct: at sizes chosen to catch the usual mistakes (1; a warp and a block, and one past;
//    several blocks; more than one grid-stride round; the chapter's 5M points) the attempt's two
//    gradients against float64 sums of the same float inputs, within 1e-4 relative, and the same
//    bits in five runs. A wrong size gets a hint from how it is wrong.
// 2. Clean: racecheck and memcheck over the small sizes (common/exercise.h).
// 3. Timed: the attempt against the lesson's launch_mse_backward at 5M points.
#include "gradient.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "linear_regression.h"
#include "program.h"
#include "splitmix64.h"
#include "stream.h"

#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

namespace workbook::linear_regression::exercise {
namespace {

constexpr double kTolerance = 1e-4;  // relative, against the float64 sums
constexpr std::int64_t kFullSize = 5'000'000;

// x in [0, 1), y = 0.7 x + 0.3, pred from the article's first w, b: every residual is positive,
// so neither sum cancels and a relative tolerance means what it says.
struct Inputs {
  std::vector<float> pred, y, x;
};

Inputs make_inputs(std::int64_t n) {
  Inputs in{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
  for (std::int64_t i = 0; i < n; ++i) {
    in.x[i] = static_cast<float>(splitmix64_of(static_cast<std::uint64_t>(i)) >> 40) * 0x1p-24f;
    in.y[i] = 0.7f * in.x[i] + 0.3f;
    in.pred[i] = 0.83f * in.x[i] + 0.7645f;
  }
  return in;
}

// The float64 gradients over the first `terms` elements, scaled by 2/n.
std::array<double, 2> reference(const Inputs& in, std::int64_t n, std::int64_t terms) {
  double rx = 0.0, r = 0.0;
  for (std::int64_t i = 0; i < terms; ++i) {
    const double ri = static_cast<double>(in.pred[i]) - static_cast<double>(in.y[i]);
    rx += ri * static_cast<double>(in.x[i]);
    r += ri;
  }
  return {2.0 / static_cast<double>(n) * rx, 2.0 / static_cast<double>(n) * r};
}

struct Device {
  DeviceBuffer<float> pred, y, x, partials, grads;
  explicit Device(const Inputs& in)
      : pred(in.pred.size()), y(in.y.size()), x(in.x.size()), partials(kPartialFloats), grads(2) {
    CUDA_CHECK(cudaMemcpy(pred.data(), in.pred.data(), in.pred.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y.data(), in.y.data(), in.y.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x.data(), in.x.data(), in.x.size() * sizeof(float), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before its data has landed, and the checker's
    // non-blocking stream does not wait for it: wait here.
    CUDA_CHECK(cudaDeviceSynchronize());
  }
};

// One run from NaN-filled grads and partials (0xFF bytes): an output never written, or a partial
// read before it is written, shows up as NaN.
std::array<float, 2> run_attempt(Device& d, std::int64_t n, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(d.partials.data(), 0xFF, kPartialFloats * sizeof(float), stream));
  CUDA_CHECK(cudaMemsetAsync(d.grads.data(), 0xFF, 2 * sizeof(float), stream));
  mse_backward(d.pred.data(), d.y.data(), d.x.data(), n, d.partials.data(), d.grads.data(), stream);
  std::array<float, 2> got{};
  CUDA_CHECK(cudaMemcpyAsync(got.data(), d.grads.data(), sizeof(got), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return got;
}

bool same_bits(const std::array<float, 2>& a, const std::array<float, 2>& b) {
  return std::memcmp(a.data(), b.data(), sizeof(a)) == 0;
}

// Why `got` differs from `want` at size n, from the shape of the difference. `last_good` is the
// largest size that passed before (0: none).
std::string hint_for(const Inputs& in, std::int64_t n, const std::array<float, 2>& got,
                     const std::array<double, 2>& want, std::int64_t last_good) {
  if (!std::isfinite(got[0]) || !std::isfinite(got[1])) {
    return "a gradient is NaN: grads (and partials) start as NaN here, so something is read before it is "
           "written, or grads is never written";
  }
  // Missing the last element: a bound like i + 1 < n fails from n = 1 on, so only when no size passed.
  const std::array<double, 2> short_one = reference(in, n, n - 1);
  if (last_good == 0 && workbook::exercise::close(got[0], short_one[0], kTolerance) &&
      workbook::exercise::close(got[1], short_one[1], kTolerance)) {
    return "the sums miss the last element: check the loop bound (i < n) and the tail guard";
  }
  const double ratio_w = got[0] / want[0];
  const double ratio_b = got[1] / want[1];
  if (std::fabs(ratio_w - ratio_b) < 1e-3 * std::fabs(ratio_b) && std::fabs(ratio_b - 1.0) > 1e-3) {
    return format("both gradients are %.4g times the right value: check the 2/n scale", ratio_b);
  }
  if (n <= 256) {
    return "wrong inside one block: a missing __syncthreads() between writing shared memory and reading it, "
           "or several threads adding into one shared location";
  }
  return format("right up to n = %lld, wrong at n = %lld: the sums of some blocks (or of some grid-stride "
                "rounds) never arrive; every block must write its partial, and the second pass must add "
                "every block's partial",
                static_cast<long long>(last_good), static_cast<long long>(n));
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("04", "gradient");
  if (auto code = checker.parse(argc, argv)) return *code;
  Stream stream;

  // 1. Correct at every size, and the same bits in five runs.
  const std::vector<std::int64_t> sizes = checker.sanitizer_pass()
                                              ? std::vector<std::int64_t>{1, 33, 300, 4099}
                                              : std::vector<std::int64_t>{1, 2, 32, 33, 256, 300, 4099, 300'007,
                                                                          kFullSize};
  std::int64_t last_good = 0;
  for (const std::int64_t n : sizes) {
    const Inputs in = make_inputs(n);
    Device d(in);
    const std::array<double, 2> want = reference(in, n, n);
    const std::array<float, 2> got = run_attempt(d, n, stream.get());
    const bool right = workbook::exercise::close(got[0], want[0], kTolerance) &&
                       workbook::exercise::close(got[1], want[1], kTolerance);
    if (!right) {
      return checker.wrong(format("at n = %lld, grads = {%.9g, %.9g} where {%.9g, %.9g} was expected",
                                  static_cast<long long>(n), got[0], got[1], want[0], want[1]),
                           hint_for(in, n, got, want, last_good));
    }
    for (int again = 0; again < 4; ++again) {
      const std::array<float, 2> rerun = run_attempt(d, n, stream.get());
      if (!same_bits(rerun, got)) {
        return checker.wrong(format("at n = %lld, one run gave {%.9g, %.9g} and the next {%.9g, %.9g}",
                                    static_cast<long long>(n), got[0], got[1], rerun[0], rerun[1]),
                             "the result changes from run to run: float atomics, or a race on shared memory (a "
                             "missing __syncthreads() between a write and the reads of it), decide the order of the "
                             "additions; write one partial per block and add them in a fixed order");
      }
    }
    last_good = n;
  }
  if (checker.sanitizer_pass()) return 0;

  // 2. Clean under racecheck and memcheck.
  const workbook::exercise::SanitizerHints hints{
      "a missing __syncthreads() between writing shared memory and reading it, or several threads "
      "writing one shared location",
      "an access past the end of an array: guard the tail (i < n), and size shared memory and partials "
      "for the blocks you launch"};
  if (auto code = checker.sanitize(hints)) return *code;

  // 3. Timed against the lesson's launch_mse_backward, at the chapter's size.
  const Inputs in = make_inputs(kFullSize);
  Device d(in);
  const Stats attempt = workbook::exercise::time_us(stream.get(), [&] {
    mse_backward(d.pred.data(), d.y.data(), d.x.data(), kFullSize, d.partials.data(), d.grads.data(), stream.get());
  });
  const Stats lesson = workbook::exercise::time_us(stream.get(), [&] {
    launch_mse_backward(d.pred.data(), d.y.data(), d.x.data(), kFullSize, d.partials.data(), d.grads.data(),
                        stream.get());
  });
  return checker.correct(attempt, lesson, "the chapter's launch_mse_backward at 5M points");
}

}  // namespace
}  // namespace workbook::linear_regression::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::linear_regression::exercise::run(argc, argv); });
}

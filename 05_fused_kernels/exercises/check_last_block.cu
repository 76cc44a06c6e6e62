// check_last_block.cu: the checker of exercise 05 last_block (the contract: last_block.h).
//
// 1. One launch: a call captured into a CUDA graph (not run) must hold one kernel.
// 2. Right: at 1, 3 and 5 points (below one float4, and a tail), a block's worth, more blocks
//    than SMs and the chapter's 4M training points, three epochs in a row from NaN-filled losses
//    and partials: after each, done_count back at 0, the loss and w, b against the float64
//    recurrence within 1e-4 relative; then the same bits on a rerun.
// 3. Clean under racecheck and memcheck (common/exercise.h); then timed against the lesson's
//    launch_last_block_epoch at 4M points.
#include "last_block.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "fused_kernels.h"
#include "fused_sums.cuh"
#include "program.h"
#include "splitmix64.h"
#include "stream.h"

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

namespace workbook::fused::exercise {
namespace {

constexpr double kTolerance = 1e-4;
constexpr int kEpochs = 3;
constexpr float kLr = 0.1f;
constexpr std::int64_t kFullSize = 4'000'000;  // chapter 05's training points (80% of 5M)

struct Epoch {
  float loss, w, b;
};

struct Problem {
  std::vector<float> x, y;
  DeviceBuffer<float> d_x, d_y, params, losses, partials;
  DeviceBuffer<unsigned> done_count;
  explicit Problem(std::int64_t n)
      : x(n), y(n), d_x(n), d_y(n), params(2), losses(kEpochs), partials(kPartialFloats), done_count(1) {
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(splitmix64_of(static_cast<std::uint64_t>(i)) >> 40) * 0x1p-24f;
      y[i] = 0.7f * x[i] + 0.3f;
    }
    CUDA_CHECK(cudaMemcpy(d_x.data(), x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y.data(), y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before its data has landed, and the checker's
    // non-blocking stream does not wait for it: wait here.
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::int64_t n() const { return static_cast<std::int64_t>(x.size()); }
  // w, b back at the article's start; losses and partials NaN (0xFF bytes); done_count 0.
  void reset(cudaStream_t stream) {
    const float start[2] = {0.83f, 0.7645f};
    CUDA_CHECK(cudaMemcpyAsync(params.data(), start, sizeof(start), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemsetAsync(losses.data(), 0xFF, losses.bytes(), stream));
    CUDA_CHECK(cudaMemsetAsync(partials.data(), 0xFF, partials.bytes(), stream));
    CUDA_CHECK(cudaMemsetAsync(done_count.data(), 0, done_count.bytes(), stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void epoch(int e, cudaStream_t stream) {
    fused_epoch(d_x.data(), d_y.data(), n(), params.data(), losses.data(), e, kLr, partials.data(), done_count.data(),
                stream);
  }
};

// The float64 recurrence from the same start.
std::vector<Epoch> reference(const Problem& p) {
  double w = 0.83f, b = 0.7645f;
  std::vector<Epoch> out;
  const auto n = static_cast<double>(p.n());
  for (int e = 0; e < kEpochs; ++e) {
    double rr = 0.0, rx = 0.0, r = 0.0;
    for (std::int64_t i = 0; i < p.n(); ++i) {
      const double ri = w * p.x[i] + b - p.y[i];
      rr += ri * ri;
      rx += ri * p.x[i];
      r += ri;
    }
    const double loss = rr / n;
    w -= kLr * (2.0 / n * rx);
    b -= kLr * (2.0 / n * r);
    out.push_back({static_cast<float>(loss), static_cast<float>(w), static_cast<float>(b)});
  }
  return out;
}

int kernels_in_one_call(Problem& p, cudaStream_t stream) {
  p.reset(stream);
  StreamCapture capture(stream);
  p.epoch(0, stream);
  cudaGraph_t graph = capture.end();
  const int kernels = kernel_nodes(graph);
  CUDA_CHECK(cudaGraphDestroy(graph));
  return kernels;
}

struct Run {
  std::vector<Epoch> epochs;
  std::vector<unsigned> done_counts;
};

Run train(Problem& p, cudaStream_t stream) {
  p.reset(stream);
  Run run;
  for (int e = 0; e < kEpochs; ++e) {
    p.epoch(e, stream);
    float params[2] = {0.0f, 0.0f}, loss = 0.0f;
    unsigned done = 0;
    CUDA_CHECK(cudaMemcpyAsync(params, p.params.data(), sizeof(params), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(&loss, p.losses.data() + e, sizeof(loss), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(&done, p.done_count.data(), sizeof(done), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    run.epochs.push_back({loss, params[0], params[1]});
    run.done_counts.push_back(done);
  }
  return run;
}

bool close(const Epoch& got, const Epoch& want) {
  return workbook::exercise::close(got.loss, want.loss, kTolerance) &&
         workbook::exercise::close(got.w, want.w, kTolerance) && workbook::exercise::close(got.b, want.b, kTolerance);
}

int check_size(const workbook::exercise::Checker& checker, std::int64_t n, cudaStream_t stream) {
  Problem p(n);
  const std::vector<Epoch> want = reference(p);
  const Run got = train(p, stream);
  for (int e = 0; e < kEpochs; ++e) {
    const Epoch& g = got.epochs[e];
    const std::string at = format("at n = %lld, epoch %d", static_cast<long long>(n), e);
    if (got.done_counts[e] != 0) {
      const bool never_stepped = std::isnan(g.loss) && g.w == 0.83f && g.b == 0.7645f;
      return checker.wrong(
          format("%s, done_count is %u after the launch", at.c_str(), got.done_counts[e]),
          never_stepped ? "no block stepped: atomicAdd returns the count before the increment, so the last of "
                          "gridDim.x blocks sees gridDim.x - 1"
                        : "the last block must set *done_count back to 0, or the next epoch has no last block");
    }
    if (!close(g, want[e])) {
      return checker.wrong(format("%s, {loss, w, b} = {%.9g, %.9g, %.9g} where {%.9g, %.9g, %.9g} was expected",
                                  at.c_str(), g.loss, g.w, g.b, want[e].loss, want[e].w, want[e].b),
                           std::isnan(g.loss) || std::isnan(g.w)
                               ? "a NaN: losses[epoch] was never written, or partials were read before every block "
                                 "wrote them (they start as NaN here)"
                               : "the last block adds every block's three partials, then thread 0 alone writes "
                                 "losses[epoch] = rr / n and steps w and b once");
    }
  }
  const Run again = train(p, stream);
  for (int e = 0; e < kEpochs; ++e) {
    const Epoch& a = again.epochs[e];
    const Epoch& g = got.epochs[e];
    if (std::memcmp(&a, &g, sizeof(Epoch)) == 0) continue;
    return checker.wrong(format("at n = %lld, epoch %d: one run gave w = %.9g and the next %.9g",
                                static_cast<long long>(n), e, g.w, a.w),
                         "the result changes from run to run: float atomics decide the order of the additions; "
                         "write each block's partials and let the last block add them in block order");
  }
  return 0;
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("05", "last_block");
  if (auto code = checker.parse(argc, argv)) return *code;
  Stream stream;

  // 1. One launch an epoch.
  {
    Problem p(4099);
    const int kernels = kernels_in_one_call(p, stream.get());
    if (kernels != 1) {
      return checker.wrong(format("one call of fused_epoch launches %d kernels", kernels),
                           "the contract is one launch an epoch: let the last block to finish add the partials "
                           "and step, instead of a second kernel");
    }
  }
  // 2. Right at every size, three epochs in a row, and the same bits again.
  const std::vector<std::int64_t> sizes = checker.sanitizer_pass()
                                              ? std::vector<std::int64_t>{1, 5, 4099}
                                              : std::vector<std::int64_t>{1, 3, 5, 1023, 4099, 300'007, kFullSize};
  for (const std::int64_t n : sizes) {
    if (const int code = check_size(checker, n, stream.get())) return code;
  }
  if (checker.sanitizer_pass()) return 0;

  // 3. Clean, then timed against the lesson's variant 4.
  const workbook::exercise::SanitizerHints hints{
      "a missing __syncthreads() between writing shared memory and reading it (the last-block flag, or a "
      "shared reduction)",
      "an access past the end of an array: partials holds 3 x gridDim.x floats; x and y hold n"};
  if (auto code = checker.sanitize(hints)) return *code;
  Problem p(kFullSize);
  p.reset(stream.get());
  int multiprocessors = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, checker.device()));
  const Stats attempt = workbook::exercise::time_us(stream.get(), [&] { p.epoch(0, stream.get()); });
  const Stats lesson = workbook::exercise::time_us(stream.get(), [&] {
    launch_last_block_epoch(p.d_x.data(), p.d_y.data(), kFullSize, p.params.data(), p.losses.data(), 0, kLr,
                            fused_blocks(kFullSize, multiprocessors), p.partials.data(), p.done_count.data(),
                            stream.get());
  });
  return checker.correct(attempt, lesson, "the chapter's variant 4 (launch_last_block_epoch) at 4M points");
}

}  // namespace
}  // namespace workbook::fused::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::fused::exercise::run(argc, argv); });
}

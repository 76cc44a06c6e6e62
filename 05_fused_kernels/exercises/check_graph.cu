// check_graph.cu: the checker of exercise 05 graph (the contract: graph.h), on 20 epochs of the
// chapter's variant 4 (launch_last_block_epoch) over 1M points.
//
// 1. The call records only: afterwards w and b are still the start values and every loss is still
//    NaN, the stream no longer capturing; and a CUDA error during the capture is named.
// 2. The graph holds one kernel launch per epoch (kernel_nodes, common/stream.h).
// 3. Replayed, it trains: every loss and the final w and b are the same bits as the 20 epochs
//    launched one by one, in two replays in a row (the graph reads w and b afresh each time).
// 4. The verdict times a replay of the whole run against the lesson's capture_epochs's graph, and
//    says what the same 20 launches cost one by one.
// No kernels of the attempt, so no compute-sanitizer pass.
#include "graph.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "fused_kernels.h"
#include "fused_sums.cuh"
#include "program.h"
#include "splitmix64.h"
#include "stream.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace workbook::fused::exercise {
namespace {

constexpr int kEpochs = 20;
constexpr std::int64_t kPoints = 1'000'000;
constexpr float kLr = 0.1f;
constexpr float kStart[2] = {0.83f, 0.7645f};

struct Training {
  DeviceBuffer<float> x{kPoints}, y{kPoints}, params{2}, losses{kEpochs}, partials;
  DeviceBuffer<unsigned> done_count{1};
  int blocks = 1;
  explicit Training(int multiprocessors) {
    blocks = fused_blocks(kPoints, multiprocessors);
    partials = DeviceBuffer<float>(3 * static_cast<std::size_t>(blocks));
    std::vector<float> hx(kPoints), hy(kPoints);
    for (std::int64_t i = 0; i < kPoints; ++i) {
      hx[i] = static_cast<float>(splitmix64_of(static_cast<std::uint64_t>(i)) >> 40) * 0x1p-24f;
      hy[i] = 0.7f * hx[i] + 0.3f;
    }
    CUDA_CHECK(cudaMemcpy(x.data(), hx.data(), x.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y.data(), hy.data(), y.bytes(), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before its data has landed, and the checker's
    // non-blocking stream does not wait for it: wait here.
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  // w, b at the start; every loss NaN; done_count 0. Synchronous.
  void reset(cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(params.data(), kStart, sizeof(kStart), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemsetAsync(losses.data(), 0xFF, losses.bytes(), stream));
    CUDA_CHECK(cudaMemsetAsync(done_count.data(), 0, done_count.bytes(), stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void epoch(int e, cudaStream_t stream) {
    launch_last_block_epoch(x.data(), y.data(), kPoints, params.data(), losses.data(), e, kLr, blocks, partials.data(),
                            done_count.data(), stream);
  }
  // {every loss, then w and b}, after the stream's work.
  std::vector<float> read(cudaStream_t stream) const {
    std::vector<float> out(kEpochs + 2);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(out.data(), losses.data(), losses.bytes(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(out.data() + kEpochs, params.data(), params.bytes(), cudaMemcpyDeviceToHost));
    return out;
  }
};

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("05", "graph");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  Stream stream;
  int multiprocessors = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, checker.device()));
  Training t(multiprocessors);
  const auto epoch = [&](int e) { t.epoch(e, stream.get()); };

  // The 20 epochs launched one by one: what the graph must reproduce, bit for bit.
  t.reset(stream.get());
  for (int e = 0; e < kEpochs; ++e) epoch(e);
  const std::vector<float> want = t.read(stream.get());

  // 1. Recorded, not run.
  t.reset(stream.get());
  cudaGraph_t captured = nullptr;
  try {
    captured = capture_epochs(kEpochs, epoch, stream.get());
  } catch (const CudaError& e) {
    return checker.wrong(format("a CUDA call failed during the capture: %s", e.what()),
                         "nothing may wait for the GPU while capturing (no cudaStreamSynchronize): the launches are "
                         "recorded, not run, until the graph is launched");
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream.get(), &capturing));
  if (capturing != cudaStreamCaptureStatusNone) {
    cudaGraph_t left = nullptr;
    (void)cudaStreamEndCapture(stream.get(), &left);  // the stream back to normal, for the exit
    if (left != nullptr) (void)cudaGraphDestroy(left);
    return checker.wrong("the stream was still capturing when the call returned",
                         "end the capture with cudaStreamEndCapture(stream, &graph) and return that graph");
  }
  if (captured == nullptr) {
    return checker.wrong("the call returned no graph", "return the graph cudaStreamEndCapture gives");
  }
  const int kernels = kernel_nodes(captured);
  const GraphExec attempt_graph(captured);  // instantiated, and the graph freed, on every way out
  const std::vector<float> after_capture = t.read(stream.get());
  for (int i = 0; i < kEpochs + 2; ++i) {
    const bool untouched = i < kEpochs ? std::isnan(after_capture[i]) : after_capture[i] == kStart[i - kEpochs];
    if (untouched) continue;
    return checker.wrong(format("after the call, %s is %.9g where nothing should have run",
                                i < kEpochs ? format("loss %d", i).c_str() : (i == kEpochs ? "w" : "b"), after_capture[i]),
                         "nothing may run during the call: queue the epochs only between cudaStreamBeginCapture and "
                         "cudaStreamEndCapture, where they are recorded");
  }
  // 2. One kernel per epoch.
  if (kernels != kEpochs) {
    return checker.wrong(format("the graph holds %d kernel launches for %d epochs", kernels, kEpochs),
                         "record every epoch: epoch(e) for e = 0 .. epochs - 1, all between the begin and the end of "
                         "the capture");
  }
  // 3. Replayed twice, the same bits as one by one.
  for (int replay = 0; replay < 2; ++replay) {
    t.reset(stream.get());
    attempt_graph.launch(stream.get());
    const std::vector<float> got = t.read(stream.get());
    for (int e = 0; e < kEpochs; ++e) {
      if (!std::isnan(got[e])) continue;
      return checker.wrong(format("replay %d: loss %d was never written", replay + 1, e),
                           "a recorded launch keeps the arguments it was given: call epoch(e) with each e, so that "
                           "epoch e's launch writes losses[e]");
    }
    for (int i = 0; i < kEpochs + 2; ++i) {
      if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
      const std::string what = i < kEpochs ? format("loss %d", i) : std::string(i == kEpochs ? "w" : "b");
      return checker.wrong(format("replay %d: %s is %.9g where the epochs launched one by one give %.9g", replay + 1,
                                  what.c_str(), got[i], want[i]),
                           "the graph must hold the same launches, in the same order, as the epochs one by one");
    }
  }

  // 4. The speed of a whole run: the attempt's graph, the lesson's, the launches one by one.
  const GraphExec lesson_graph(fused::capture_epochs(kEpochs, epoch, stream.get()));
  const Stats attempt = workbook::exercise::time_us(stream.get(), [&] { attempt_graph.launch(stream.get()); });
  const Stats lesson = workbook::exercise::time_us(stream.get(), [&] { lesson_graph.launch(stream.get()); });
  const Stats one_by_one = workbook::exercise::time_us(stream.get(), [&] {
    for (int e = 0; e < kEpochs; ++e) epoch(e);
  });
  return checker.correct(attempt, lesson,
                         format("the chapter's capture_epochs, %d epochs at 1M points in one launch (launched one "
                                "by one: %.1f us)", kEpochs, one_by_one.median));
}

}  // namespace
}  // namespace workbook::fused::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::fused::exercise::run(argc, argv); });
}

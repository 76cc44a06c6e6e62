// check_pipeline.cu: the checker of exercise 03 pipeline (the contract: pipeline.h).
//
// Before each call the checker queues a 20 ms spin on `transfer`, so that every copy lands late,
// and fills the device input with a poison value. Then, for 1, 3 and 8 chunks of 1, 1000 and
// 262,144 floats:
// 1. The call only queues: it must return in under 10 ms (the copies cannot start before 20 ms).
// 2. Right: once `compute` is done, every output equals the CPU twin of its input. An output
//    still holding the poison means its copy out was not on `compute`; one holding the poison's
//    transform means its kernel read the chunk before the copy landed.
// 3. Clean under racecheck and memcheck (common/exercise.h); then timed, fork to join, against
//    the lesson's TwoStreamPipeline.
#include "pipeline.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "program.h"
#include "stream.h"

#include <chrono>
#include <cmath>
#include <vector>

namespace workbook::streams_events::exercise {
namespace {

constexpr float kPoison = -7.0f;  // what the device input holds before a copy lands
constexpr float kUnset = 1e30f;   // what the host output holds before a copy out
constexpr int kIterations = 8;
constexpr long long kLateNs = 20'000'000;

struct Buffers {
  PinnedBuffer<float> in, out;
  DeviceBuffer<float> dev_in, dev_out;
  Batch batch;
  Buffers(int chunks, std::size_t chunk_elements)
      : in(chunks * chunk_elements), out(chunks * chunk_elements), dev_in(chunks * chunk_elements),
        dev_out(chunks * chunk_elements) {
    batch = Batch{in.data(), out.data(), dev_in.data(), dev_out.data(), chunk_elements, chunks, kIterations};
    for (std::size_t i = 0; i < batch.total_elements(); ++i) in.data()[i] = 0.25f + static_cast<float>(i % 1000) * 1e-3f;
  }
};

std::vector<Event> make_events(int chunks) {
  std::vector<Event> events;
  for (int c = 0; c < chunks; ++c) events.emplace_back();
  return events;
}

std::vector<cudaEvent_t> handles(const std::vector<Event>& events) {
  std::vector<cudaEvent_t> h;
  for (const Event& e : events) h.push_back(e.get());
  return h;
}

// Fills the device input with the poison and the host output with kUnset, then makes `transfer` late.
void prepare(Buffers& b, cudaStream_t transfer) {
  std::vector<float> poison(b.batch.total_elements(), kPoison);
  CUDA_CHECK(cudaMemcpy(b.dev_in.data(), poison.data(), poison.size() * sizeof(float), cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return before its data has landed, and it orders nothing
  // with the non-blocking streams: wait until the poison is in place.
  CUDA_CHECK(cudaDeviceSynchronize());
  for (std::size_t i = 0; i < b.batch.total_elements(); ++i) b.out.data()[i] = kUnset;
  launch_spin(kLateNs, nullptr, transfer);
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("03", "pipeline");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  Stream transfer, compute;
  const float poisoned = transform_cpu(kPoison, kIterations);
  {
    // Every kernel loaded once before the checks: the first launch of a kernel loads its module
    // (lazy loading), which can wait for the GPU and so hide a missing wait.
    Buffers warm(1, 1);
    launch_spin(1000, nullptr, compute.get());
    enqueue_serial(warm.batch, compute.get());
    CUDA_CHECK(cudaStreamSynchronize(compute.get()));
  }

  struct Shape {
    int chunks;
    std::size_t elements;
  };
  const std::vector<Shape> shapes = checker.sanitizer_pass() ? std::vector<Shape>{{3, 1000}}
                                                             : std::vector<Shape>{{1, 1}, {3, 1000}, {8, 262'144}};
  for (const Shape& s : shapes) {
    Buffers b(s.chunks, s.elements);
    const std::vector<Event> copied = make_events(s.chunks);
    prepare(b, transfer.get());

    // 1. The call only queues.
    const auto start = std::chrono::steady_clock::now();
    enqueue_pipeline(b.batch, transfer.get(), compute.get(), handles(copied));
    const double call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CUDA_CHECK(cudaStreamSynchronize(compute.get()));
    const std::string where = format("%d chunks of %zu floats", s.chunks, s.elements);
    if (call_ms > 10.0) {
      return checker.wrong(format("with %s, the call blocked the host for %.1f ms", where.c_str(), call_ms),
                           "it waited for the GPU: the call must only queue work, so no cudaStreamSynchronize or "
                           "cudaEventSynchronize inside; the GPU-side wait is cudaStreamWaitEvent");
    }
    // 2. Every output, read once `compute` is done.
    for (std::size_t i = 0; i < b.batch.total_elements(); ++i) {
      const float want = transform_cpu(b.in.data()[i], kIterations);
      const float got = b.out.data()[i];
      if (got == want) continue;
      const auto chunk = static_cast<int>(i / s.elements);
      const std::string what = format("with %s, output %zu (chunk %d) is %.7g where %.7g was expected", where.c_str(),
                                      i, chunk, got, want);
      if (got == kUnset) {
        return checker.wrong(what, "the chunk's copy out had not happened when `compute` was done: queue the kernel "
                                   "and the copy out on `compute`, the stream the caller waits on");
      }
      if (got == poisoned) {
        return checker.wrong(what, "the kernel read the chunk before its copy had landed: record copied[c] on "
                                   "`transfer` after the copy, and make `compute` wait for it before the kernel");
      }
      return checker.wrong(what, "each chunk goes in, through the kernel and out at the same offset");
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(transfer.get()));
  if (checker.sanitizer_pass()) return 0;

  // 3. Clean, then timed from a fork to a join, against the lesson's TwoStreamPipeline.
  const workbook::exercise::SanitizerHints hints{"a race between two kernels' threads: order them with events",
                                                 "an access past the end of a buffer: each chunk at its offset"};
  if (auto code = checker.sanitize(hints)) return *code;
  Buffers b(8, 262'144);
  const std::vector<Event> copied = make_events(8);
  Event forked, joined;
  auto time_of = [&](auto&& enqueue) {
    return workbook::exercise::time_us(compute.get(), [&] {
      forked.record(compute.get());
      CUDA_CHECK(cudaStreamWaitEvent(transfer.get(), forked.get(), 0));
      enqueue();
      joined.record(transfer.get());
      CUDA_CHECK(cudaStreamWaitEvent(compute.get(), joined.get(), 0));
    });
  };
  const Stats attempt = time_of([&] { enqueue_pipeline(b.batch, transfer.get(), compute.get(), handles(copied)); });
  TwoStreamPipeline lesson_pipeline(8);
  const Stats lesson = time_of([&] {
    forked.record(compute.get());
    CUDA_CHECK(cudaStreamWaitEvent(lesson_pipeline.transfer(), forked.get(), 0));
    CUDA_CHECK(cudaStreamWaitEvent(lesson_pipeline.compute(), forked.get(), 0));
    lesson_pipeline.enqueue(b.batch, Ordering::kEventWait);
    joined.record(lesson_pipeline.compute());
    CUDA_CHECK(cudaStreamWaitEvent(compute.get(), joined.get(), 0));
  });
  return checker.correct(attempt, lesson, "the chapter's TwoStreamPipeline on 8 chunks of 1 MiB");
}

}  // namespace
}  // namespace workbook::streams_events::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::streams_events::exercise::run(argc, argv); });
}

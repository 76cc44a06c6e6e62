// check_timed_copy.cu: the checker of exercise 02 timed_copy (the contract: timed_copy.h).
//
// Before each call the checker queues a kernel on `stream` that waits 20 ms and then poisons the
// destination, as a training step still running would own it. Then, at 1 byte, 4 KiB, an odd
// 1,000,003 bytes and 64 MiB:
// 1. Ordered: the copy must run after that kernel (the destination holds the source, not the
//    poison), and the call must return only once the copy is done (`stream` idle at return).
// 2. Timed right: the time returned must be the copy's own, within 0.5x-2x of the checker's own
//    events around a copy of the same size (the 20 ms before it must not count).
// 3. The verdict compares the attempt's 64 MiB time with the chapter's way (time_on_stream).
// No kernels of the attempt, so no compute-sanitizer pass.
#include "timed_copy.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "event_timer.h"
#include "exercise.h"
#include "format.h"
#include "program.h"
#include "stream.h"
#include "wait_then_poison.cuh"

#include <cstring>
#include <vector>

namespace workbook::transfer::exercise {
namespace {

constexpr unsigned char kSource = 0x5A;

std::string size_text(std::size_t bytes) { return format("%zu bytes", bytes); }

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("02", "timed_copy");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  Stream stream;
  constexpr std::size_t kLargest = std::size_t{64} << 20;
  PinnedBuffer<unsigned char> src(kLargest);
  std::memset(src.data(), kSource, kLargest);
  DeviceBuffer<unsigned char> dst(kLargest);
  std::vector<unsigned char> back(kLargest);

  for (const std::size_t bytes : {std::size_t{1}, std::size_t{4096}, std::size_t{1'000'003}, kLargest}) {
    // The checker's own time for this copy: events on `stream`, median of 5.
    const Stats reference = time_on_stream(stream.get(), Repeats{1, 5}, [&] {
      CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyHostToDevice, stream.get()));
    });
    wait_then_poison<<<1, 256, 0, stream.get()>>>(dst.data(), bytes, 20'000'000ULL);
    CUDA_CHECK_LAUNCH();
    float ms = 0.0f;
    try {
      ms = timed_copy_ms(src.data(), dst.data(), bytes, stream.get());
    } catch (const CudaError& e) {
      const bool not_ready = e.code() == cudaErrorNotReady;
      return checker.wrong(format("at %s, a CUDA call failed: %s", size_text(bytes).c_str(), e.what()),
                           not_ready ? "cudaEventElapsedTime was asked before the stop event happened: "
                                       "cudaEventSynchronize(stop) first"
                                     : "read the failing call's error above");
    }
    const cudaError_t idle = cudaStreamQuery(stream.get());
    if (idle != cudaSuccess && idle != cudaErrorNotReady) CUDA_CHECK(idle);
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));

    // 1. The order: the copy after the queued kernel, and the call back only when it is done.
    CUDA_CHECK(cudaMemcpy(back.data(), dst.data(), bytes, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < bytes; ++i) {
      if (back[i] == kSource) continue;
      return checker.wrong(
          format("at %s, byte %zu of the destination is 0x%02X, not the source's 0x%02X", size_text(bytes).c_str(), i,
                 back[i], kSource),
          back[i] == kPoison ? "the copy ran before the work already queued on `stream` (that work wrote 0xC3 "
                               "after it): queue the copy and both events on `stream`, not on the default stream"
                             : "the destination does not hold the source: copy `bytes` from src to dst, host to device");
    }
    if (idle == cudaErrorNotReady) {
      return checker.wrong(format("at %s, the call returned while `stream` was still busy", size_text(bytes).c_str()),
                           "it returned before the copy finished, so its time cannot be the copy's: wait for the stop "
                           "event (cudaEventSynchronize) before reading the time; a host clock only times the queuing");
    }
    // 2. The time: the copy's own.
    if (!(ms >= 0.5 * reference.median && ms <= 2.0 * reference.median + 0.05)) {
      const bool includes_wait = ms > 15.0;
      return checker.wrong(format("at %s, the time returned is %.4f ms where the copy takes %.4f ms",
                                  size_text(bytes).c_str(), ms, reference.median),
                           includes_wait ? "the time includes the 20 ms of work queued before the copy: record the "
                                           "start event on `stream`, right before the copy"
                                         : "the time is not the copy's: events on `stream`, one right before the copy "
                                           "and one right after it");
    }
  }

  // 3. The verdict: the attempt's own 64 MiB time against the chapter's way, time_on_stream.
  std::vector<double> attempt_ms;
  for (int i = 0; i < 10; ++i) attempt_ms.push_back(timed_copy_ms(src.data(), dst.data(), kLargest, stream.get()));
  const Stats lesson = time_on_stream(stream.get(), Repeats{1, 10}, [&] {
    CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), kLargest, cudaMemcpyHostToDevice, stream.get()));
  });
  Stats attempt = summarize(attempt_ms);
  Stats lesson_us = lesson;
  for (Stats* s : {&attempt, &lesson_us}) {
    s->median *= 1e3;
    s->min *= 1e3;
    s->max *= 1e3;
  }
  return checker.correct(attempt, lesson_us,
                         format("the chapter's time_on_stream for the same 64 MiB copy (%.1f GB/s)",
                                gigabytes_per_second(static_cast<double>(kLargest), lesson.median)));
}

}  // namespace
}  // namespace workbook::transfer::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::transfer::exercise::run(argc, argv); });
}

// check_staged_copy.cu: the checker of exercise 02 staged_copy (the contract: staged_copy.h), with
// 1 MiB staging buffers.
//
// Before each call the checker queues a kernel on `stream` that waits 20 ms and then poisons the
// destination: the work the copy must come after. Until it ends no copy can run, so an attempt
// that refills a staging buffer without waiting for its copy overwrites bytes not yet sent. At
// 1 byte, an odd 1,000,003 bytes (one short chunk), 2 MiB (two whole chunks) and 3.5 MiB + 1
// (four chunks, the last short):
// 1. Back only when done: at return the stream must be idle (a copy queued elsewhere shows as the
//    destination already holding the source while the poisoning kernel still waits).
// 2. Right: every byte of the destination equals the pageable source.
// 3. The verdict times a 64 MiB copy against the lesson's copy_pageable_staged, and says what
//    cudaMemcpy from the same pageable memory takes (the driver doing the same).
// No kernels of the attempt, so no compute-sanitizer pass.
#include "staged_copy.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "host_memory.h"
#include "program.h"
#include "stream.h"
#include "wait_then_poison.cuh"

#include <cstring>
#include <vector>

namespace workbook::transfer::exercise {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;
constexpr std::size_t kLargest = std::size_t{64} << 20;

struct Staging {
  PinnedBuffer<std::byte> a{kChunk}, b{kChunk};
  Event done_a, done_b;
  std::byte* buffers[2] = {a.data(), b.data()};
  cudaEvent_t done[2] = {done_a.get(), done_b.get()};
};

// What is wrong with the destination, as a verdict (0 when every byte is right).
int judge(const workbook::exercise::Checker& checker, const std::vector<unsigned char>& got,
          const unsigned char* want, std::size_t bytes) {
  std::size_t i = 0;
  while (i < bytes && got[i] == want[i]) ++i;
  if (i == bytes) return 0;
  const std::size_t chunk = i / kChunk, last = (bytes - 1) / kChunk;
  const std::string what = format("at %zu bytes, byte %zu (chunk %zu) is 0x%02X where the source holds 0x%02X", bytes,
                                  i, chunk, got[i], want[i]);
  if (chunk == last && bytes % kChunk != 0 && got[i] == kPoison) {
    return checker.wrong(what + ", never copied", "the last chunk is shorter than the others: copy bytes - offset of it");
  }
  if (got[i] != kPoison) {
    return checker.wrong(what + ", a byte of another chunk",
                         "a staging buffer was refilled before the copy reading it had run: "
                         "cudaEventSynchronize(done[i % 2]) before the memcpy into staging[i % 2]");
  }
  return checker.wrong(what + ", never copied", "copy every chunk, each from its own offset of src to the same offset of dst");
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("02", "staged_copy");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  Stream stream, side;
  Staging staging;
  std::vector<unsigned char> src(kLargest), got(kLargest);  // pageable, as a plain CPU tensor's
  fill_pattern(reinterpret_cast<std::byte*>(src.data()), src.size(), 2);
  DeviceBuffer<unsigned char> dst(kLargest);

  // Each size is larger than the one before, so a destination that already holds the source while
  // the poisoning kernel still waits can only be this call's copies, landed early.
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{1'000'003}, 2 * kChunk, 7 * kChunk / 2 + 1}) {
    wait_then_poison<<<1, 256, 0, stream.get()>>>(dst.data(), bytes, 20'000'000ULL);
    CUDA_CHECK_LAUNCH();
    staged_copy(dst.data(), src.data(), bytes, staging.buffers, kChunk, staging.done, stream.get());
    const cudaError_t idle = cudaStreamQuery(stream.get());
    if (idle != cudaSuccess && idle != cudaErrorNotReady) CUDA_CHECK(idle);
    if (idle == cudaErrorNotReady) {
      // 1. Still busy: either the copies went elsewhere (done already) or the call did not wait.
      CUDA_CHECK(cudaMemcpyAsync(got.data(), dst.data(), bytes, cudaMemcpyDeviceToHost, side.get()));
      side.synchronize();
      stream.synchronize();
      if (std::memcmp(got.data(), src.data(), bytes) == 0) {
        return checker.wrong(format("at %zu bytes, the copy landed while the work queued before it on `stream` "
                                    "still ran", bytes),
                             "the copies must be queued on `stream` (cudaMemcpyAsync(..., stream), the events "
                             "recorded on it), not on the default stream");
      }
      return checker.wrong(format("at %zu bytes, the call returned while `stream` was still busy", bytes),
                           "return only once every byte has landed: cudaStreamSynchronize(stream) after the last "
                           "copy, as cudaMemcpy from pageable memory does");
    }
    // 2. Every byte.
    CUDA_CHECK(cudaMemcpy(got.data(), dst.data(), bytes, cudaMemcpyDeviceToHost));
    if (const int verdict = judge(checker, got, src.data(), bytes)) return verdict;
  }

  // 3. The speed at 64 MiB: the attempt, the lesson's, and the driver's own staging (cudaMemcpy).
  // The copy is driven from the host (memcpy, waits), so the events around each call time all of
  // it, host work included; the attempt is timed first, then the lesson's same loop.
  const auto copy_with = [&](auto&& copy) {
    return workbook::exercise::time_us(stream.get(), [&] {
      copy(dst.data(), src.data(), kLargest, staging.buffers, kChunk, staging.done, stream.get());
    });
  };
  const Stats attempt = copy_with(staged_copy);
  const Stats lesson = copy_with(copy_pageable_staged);
  // cudaMemcpy goes on the legacy default stream, and may return before its last chunk lands: the
  // events go on that stream too, so that the second one waits for the copy (on `stream`, which
  // does not wait for the legacy stream, it might not).
  const Stats driver = workbook::exercise::time_us(cudaStreamLegacy, [&] {
    CUDA_CHECK(cudaMemcpy(dst.data(), src.data(), kLargest, cudaMemcpyHostToDevice));
  });
  const double gbps = static_cast<double>(kLargest) / (lesson.median * 1e3);
  return checker.correct(attempt, lesson,
                         format("the chapter's copy_pageable_staged for 64 MiB (%.1f GB/s; cudaMemcpy from the same "
                                "pageable memory: %.0f us)", gbps, driver.median));
}

}  // namespace
}  // namespace workbook::transfer::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::transfer::exercise::run(argc, argv); });
}

// check_fork_join.cu: the checker of exercise 03 fork_join (the contract: fork_join.h), with 2, 3
// and 4 streams.
//
// Fork: streams[0] holds a kernel that spins 20 ms and then raises its flag; after fork, every side
// stream gets a probe kernel that reads that flag. Join: side stream k holds a kernel that spins
// 40, 30, 20 ms (the first side stream the longest) and then raises flag k; after join, streams[0]
// gets a probe that reads every flag. So:
// 1. Each call only queues: it must return in under 10 ms (no spin has ended by then).
// 2. Every probe must see every flag it was ordered after raised; a flag still down names the
//    stream that was not waited for.
// 3. The verdict times fork then join of 4 idle streams against the lesson's ForkJoin.
// The attempt launches no kernels, so there is no compute-sanitizer pass.
#include "fork_join.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "globaltimer.cuh"
#include "program.h"
#include "stream.h"
#include "streams_events.h"

#include <chrono>
#include <vector>

namespace workbook::streams_events::exercise {
namespace {

constexpr int kMaxStreams = 4;

__global__ void spin_then_raise(unsigned* flag, unsigned long long ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < ns) __nanosleep(1000);
  *flag = 1;
}

// seen[i] = flags[i] for i < count: what this stream's work can see when it runs.
__global__ void probe(const unsigned* flags, unsigned* seen, int count) {
  for (int i = 0; i < count; ++i) seen[i] = flags[i];
}

struct Streams {
  std::vector<Stream> owned;
  std::vector<Event> events;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> handles;
  explicit Streams(int count) : owned(static_cast<std::size_t>(count)) {
    for (int k = 0; k < count; ++k) {
      events.emplace_back();
      streams.push_back(owned[k].get());
      handles.push_back(events[k].get());
    }
  }
  void synchronize() const { for (const Stream& s : owned) s.synchronize(); }
};

// Runs `call` and returns its host time in milliseconds.
template <class Call>
double host_ms(Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::vector<unsigned> read(const DeviceBuffer<unsigned>& buffer) {
  std::vector<unsigned> host(buffer.size());
  CUDA_CHECK(cudaMemcpy(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
  return host;
}

void clear(DeviceBuffer<unsigned>& flags, DeviceBuffer<unsigned>& seen) {
  CUDA_CHECK(cudaMemset(flags.data(), 0, flags.bytes()));
  CUDA_CHECK(cudaMemset(seen.data(), 0, seen.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before the non-blocking streams run
}

const char* kHostWaitHint = "it waited on the host (cudaStreamSynchronize): record events and queue "
                            "cudaStreamWaitEvent instead, so the host goes on queuing";

int check_fork(const workbook::exercise::Checker& checker, int count, DeviceBuffer<unsigned>& flags,
               DeviceBuffer<unsigned>& seen) {
  Streams s(count);
  clear(flags, seen);
  spin_then_raise<<<1, 1, 0, s.streams[0]>>>(flags.data(), 20'000'000ULL);
  CUDA_CHECK_LAUNCH();
  const double ms = host_ms([&] { fork(s.streams, s.handles); });
  for (int k = 1; k < count; ++k) {
    probe<<<1, 1, 0, s.streams[k]>>>(flags.data(), seen.data() + k, 1);
    CUDA_CHECK_LAUNCH();
  }
  s.synchronize();
  if (ms > 10.0) return checker.wrong(format("with %d streams, fork took %.1f ms to return", count, ms), kHostWaitHint);
  const std::vector<unsigned> saw = read(seen);
  for (int k = 1; k < count; ++k) {
    if (saw[k] == 1) continue;
    return checker.wrong(format("with %d streams, side stream %d ran its work before streams[0]'s work queued "
                                "before fork had finished", count, k),
                         k > 1 && saw[1] == 1
                             ? "every side stream must wait, not only streams[1]: a cudaStreamWaitEvent on each"
                             : "record the event on streams[0] first, then queue the waits: a wait on an event that "
                               "has not been recorded waits for nothing");
  }
  return 0;
}

int check_join(const workbook::exercise::Checker& checker, int count, DeviceBuffer<unsigned>& flags,
               DeviceBuffer<unsigned>& seen) {
  Streams s(count);
  clear(flags, seen);
  for (int k = 1; k < count; ++k) {
    const unsigned long long ns = 10'000'000ULL * static_cast<unsigned long long>(5 - k);  // 40, 30, 20 ms
    spin_then_raise<<<1, 1, 0, s.streams[k]>>>(flags.data() + k, ns);
    CUDA_CHECK_LAUNCH();
  }
  const double ms = host_ms([&] { join(s.streams, s.handles); });
  probe<<<1, 1, 0, s.streams[0]>>>(flags.data(), seen.data(), count);
  CUDA_CHECK_LAUNCH();
  s.synchronize();
  if (ms > 10.0) return checker.wrong(format("with %d streams, join took %.1f ms to return", count, ms), kHostWaitHint);
  const std::vector<unsigned> saw = read(seen);
  int missed = 0, caught = 0;
  for (int k = 1; k < count; ++k) (saw[k] == 1 ? caught : missed) += 1;
  for (int k = 1; k < count; ++k) {
    if (saw[k] == 1) continue;
    return checker.wrong(format("with %d streams, streams[0] ran its work after join before side stream %d's work "
                                "had finished", count, k),
                         caught > 0 ? "one event per side stream, each waited for: an event recorded again before "
                                      "its wait is queued marks only its last record"
                                    : "join is the other way round from fork: record on each side stream, and "
                                      "make streams[0] wait (cudaStreamWaitEvent(streams[0], ...))");
  }
  return 0;
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("03", "fork_join");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  DeviceBuffer<unsigned> flags(kMaxStreams), seen(kMaxStreams);
  for (int count = 2; count <= kMaxStreams; ++count) {
    if (const int verdict = check_fork(checker, count, flags, seen)) return verdict;
    if (const int verdict = check_join(checker, count, flags, seen)) return verdict;
  }
  Streams s(kMaxStreams);
  const Stats attempt = workbook::exercise::time_us(s.streams[0], [&] {
    fork(s.streams, s.handles);
    join(s.streams, s.handles);
  });
  ForkJoin lesson_fork_join(kMaxStreams);
  const Stats lesson = workbook::exercise::time_us(s.streams[0], [&] {
    lesson_fork_join.fork(s.streams);
    lesson_fork_join.join(s.streams);
  });
  return checker.correct(attempt, lesson, "the chapter's ForkJoin, fork then join of 4 idle streams");
}

}  // namespace
}  // namespace workbook::streams_events::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::streams_events::exercise::run(argc, argv); });
}

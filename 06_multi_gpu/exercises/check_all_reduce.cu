// check_all_reduce.cu: the checker of exercise 06 all_reduce (the contract: all_reduce.h), on
// every GPU of the machine (two at least).
//
// Each GPU d's buffer holds 3 floats to reduce, GPU d's sums {1 + d, (d + 1) / 2, -(d + 1) / 4},
// and 13 guard floats behind them.
// 1. The first call, on idle streams: it must return, and its all-reduce end, within 20 s (one
//    thread that issues the GPUs' parts outside a group waits for ever in the first), and every
//    buffer must hold the sum over the GPUs (exact in float), the guards untouched. This first
//    collective also connects the GPUs, which NCCL does on the host while it waits for the GPUs.
// 2. The second call, behind the epoch's work: on streams[d] a kernel that waits until the call
//    has returned (or 3 s, then it says it ran out of patience) and only then writes the sums
//    (until then the buffer holds NaN). Every buffer must hold the sum again, and no kernel may
//    have run out of patience: the call only queues (no host wait, before the all-reduce or after).
// 3. The verdict times the attempt against the lesson's all_reduce_sums on the same communicators.
// No kernels of the attempt, so no compute-sanitizer pass.
#include "all_reduce.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "globaltimer.cuh"
#include "support/nccl_comm.h"
#include "support/rank_environment.h"
#include "multi_gpu.h"
#include "program.h"
#include "stream.h"

#include <cmath>
#include <memory>
#include <vector>

namespace workbook::multi_gpu::exercise {
namespace {

constexpr int kSums = 3, kGuards = 13;
constexpr float kGuard = 1000.0f;
constexpr unsigned long long kPatienceNs = 3'000'000'000ULL;  // how long the work before the call waits for it
constexpr int kWarmUps = 3, kTimed = 20;

// The epoch's work before the all-reduce: waits until the host raises `release`, which it does
// once the call has returned, then writes this GPU's three sums. If `ns` of GPU time pass first,
// the host was waiting for this kernel inside the call: it raises *ran_out and goes on.
__global__ void wait_then_write_sums(float* buffer, float d, const volatile unsigned* release, volatile unsigned* ran_out,
                                     unsigned long long ns) {
  const unsigned long long start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start >= ns) {
      *ran_out = 1;
      break;
    }
    __nanosleep(1000);
  }
  buffer[0] = 1.0f + d;
  buffer[1] = 0.5f * (d + 1.0f);
  buffer[2] = -0.25f * (d + 1.0f);
}

struct Gpu {
  int device = 0;
  std::unique_ptr<Stream> stream;
  DeviceBuffer<float> buffer;
};

float own_sum(int d, int k) { return k == 0 ? 1.0f + d : k == 1 ? 0.5f * (d + 1) : -0.25f * (d + 1); }

// The buffers before the all-reduce: each GPU's sums (or NaN, for the epoch's work to write them),
// then the guards.
void reset(std::vector<Gpu>& gpus, bool with_sums) {
  for (Gpu& gpu : gpus) {
    std::vector<float> host(kSums + kGuards, std::nanf(""));
    for (int k = 0; k < kSums && with_sums; ++k) host[k] = own_sum(gpu.device, k);
    for (int g = 0; g < kGuards; ++g) host[kSums + g] = kGuard + static_cast<float>(g);
    CUDA_CHECK(cudaSetDevice(gpu.device));
    CUDA_CHECK(cudaMemcpy(gpu.buffer.data(), host.data(), gpu.buffer.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // in place before the non-blocking streams use them
  }
}

// What is wrong with GPU d's buffer after the all-reduce, as a verdict; 0 when it is right.
int judge(const workbook::exercise::Checker& checker, const std::vector<float>& got, int d, int count) {
  for (int k = 0; k < kSums; ++k) {
    float want = 0.0f;
    for (int r = 0; r < count; ++r) want += own_sum(r, k);
    if (got[k] == want) continue;
    const std::string what = format("GPU %d's sum %d is %g where the sum over the %d GPUs is %g", d, k, got[k], count, want);
    if (got[k] == own_sum(d, k)) {
      return checker.wrong(what + " (its own sum alone)",
                           "the all-reduce ran before the work queued on streams[d] (which writes the sums): queue "
                           "each GPU's part on streams[d], or make the stream it runs on wait for streams[d]");
    }
    if (std::fabs(got[k] - want / static_cast<float>(count)) <= 1e-6f * std::fabs(want)) {
      return checker.wrong(what + " (the mean)",
                           "ncclAvg divides by the number of GPUs: DataParallel adds the sums (ncclSum), the step "
                           "divides by n itself");
    }
    return checker.wrong(what, "each GPU's 3 floats, in place, added: ncclAllReduce(buffer, buffer, 3, ncclFloat, "
                               "ncclSum, comms[d], streams[d])");
  }
  for (int g = 0; g < kGuards; ++g) {
    if (got[kSums + g] == kGuard + static_cast<float>(g)) continue;
    return checker.wrong(format("GPU %d's float %d, past the 3 sums, was changed", d, kSums + g),
                         "NCCL counts elements, not bytes: count 3 (floats), not 12");
  }
  return 0;
}

// 2. The second call, behind work on every stream that lasts until the call has returned. The
// flags are pinned host memory, mapped: with unified addressing (every 64-bit system) the GPUs use
// the host's pointer. [0] releases the kernels; [1 + g] says GPU g's ran out of patience.
template <class CallAndWait, class JudgeAll>
int check_only_queues(workbook::exercise::Checker& checker, std::vector<Gpu>& gpus, CallAndWait&& call_and_wait,
                      JudgeAll&& judge_all) {
  reset(gpus, /*with_sums=*/false);
  PinnedBuffer<unsigned> flags(1 + gpus.size());
  volatile unsigned* flag = flags.data();
  for (std::size_t i = 0; i < flags.size(); ++i) flag[i] = 0;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    CUDA_CHECK(cudaSetDevice(gpus[g].device));
    wait_then_write_sums<<<1, 1, 0, gpus[g].stream->get()>>>(gpus[g].buffer.data(), static_cast<float>(gpus[g].device),
                                                             flags.data(), flags.data() + 1 + g, kPatienceNs);
    CUDA_CHECK_LAUNCH();
  }
  call_and_wait([&] { flag[0] = 1; });  // the epoch's work may end once the call has returned
  if (const int verdict = judge_all()) return verdict;
  // Only queued: no kernel before it ran out of patience, so the host never waited for one.
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    if (flag[1 + g] == 0) continue;
    return checker.wrong(format("the call returned only after GPU %d's work queued before it had ended", gpus[g].device),
                         "it should only queue: no cudaStreamSynchronize or cudaDeviceSynchronize inside, before "
                         "the all-reduce or after it (the host goes on to queue the next epoch, as DataParallel's "
                         "loop does)");
  }
  return 0;
}

// 3. The speed: one all-reduce, queued and finished, over and over (GPU 0's events, as the stream
// they time).
template <class Call>
Stats time_calls(std::vector<Gpu>& gpus, const std::vector<float*>& buffers, const std::vector<ncclComm_t>& per_gpu,
                 const std::vector<cudaStream_t>& streams, Call&& call) {
  std::vector<double> us;
  CUDA_CHECK(cudaSetDevice(gpus[0].device));
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  for (int i = 0; i < kWarmUps + kTimed; ++i) {
    CUDA_CHECK(cudaSetDevice(gpus[0].device));
    start.record(streams[0]);
    call(buffers, per_gpu, streams);
    CUDA_CHECK(cudaSetDevice(gpus[0].device));
    stop.record(streams[0]);
    for (Gpu& gpu : gpus) {
      CUDA_CHECK(cudaSetDevice(gpu.device));
      gpu.stream->synchronize();
    }
    if (i >= kWarmUps) us.push_back(1e3 * elapsed_ms(start, stop));
  }
  return summarize(us);
}

int run(int argc, char** argv) {
  workbook::exercise::Checker checker("06", "all_reduce");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  if (auto code = checker.need_gpus(2)) return *code;
  apply_forced_environment();
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  std::vector<int> devices;
  std::vector<Gpu> gpus;
  for (int d = 0; d < count; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    devices.push_back(d);
    gpus.push_back(Gpu{d, std::make_unique<Stream>(), DeviceBuffer<float>(kSums + kGuards)});
  }
  CommunicatorGroup comms = CommunicatorGroup::init_all(devices);
  std::vector<float*> buffers;
  std::vector<ncclComm_t> per_gpu;
  std::vector<cudaStream_t> streams;
  for (Gpu& gpu : gpus) {
    buffers.push_back(gpu.buffer.data());
    per_gpu.push_back(comms.get(per_gpu.size()));  // the communicators are in the order of `devices`
    streams.push_back(gpu.stream->get());
  }

  // 1. The first call, on idle streams, and every GPU's sums.
  const auto call_and_wait = [&](auto&& before_waiting) {
    const workbook::exercise::Deadline guard(
        20.0, "the all-reduce did not return, or never finished, within 20 s",
        "one host thread issues every GPU's part: put them all between ncclGroupStart() and ncclGroupEnd(), or the "
        "first ncclAllReduce waits for peers this thread has not issued yet");
    all_reduce_sums(buffers, per_gpu, streams);
    before_waiting();
    for (Gpu& gpu : gpus) {
      CUDA_CHECK(cudaSetDevice(gpu.device));
      gpu.stream->synchronize();
    }
  };
  const auto judge_all = [&] {
    for (Gpu& gpu : gpus) {
      std::vector<float> got(kSums + kGuards);
      CUDA_CHECK(cudaSetDevice(gpu.device));
      CUDA_CHECK(cudaMemcpy(got.data(), gpu.buffer.data(), gpu.buffer.bytes(), cudaMemcpyDeviceToHost));
      if (const int verdict = judge(checker, got, gpu.device, count)) return verdict;
    }
    return 0;
  };
  reset(gpus, /*with_sums=*/true);
  call_and_wait([] {});
  if (const int verdict = judge_all()) return verdict;

  if (const int verdict = check_only_queues(checker, gpus, call_and_wait, judge_all)) return verdict;
  const Stats attempt = time_calls(gpus, buffers, per_gpu, streams, all_reduce_sums);
  const Stats lesson = time_calls(gpus, buffers, per_gpu, streams, multi_gpu::all_reduce_sums);
  return checker.correct(attempt, lesson, format("the chapter's all_reduce_sums over the same %d GPUs", count));
}

}  // namespace
}  // namespace workbook::multi_gpu::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::multi_gpu::exercise::run(argc, argv); });
}

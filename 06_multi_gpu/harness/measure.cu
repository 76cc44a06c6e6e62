// measure.cu: peer copies and NCCL all-reduce bandwidth, for multi_gpu_bench.
#include "measure.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "bench_plan.h"
#include "globaltimer.cuh"
#include "nccl_check.h"
#include "nccl_comm.h"
#include "nvtx.h"
#include "one_shot_exchange.cuh"
#include "stream.h"
#include "symmetric_windows.h"

#include <nccl.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace workbook::multi_gpu {
namespace {

constexpr int kThreads = 256;

int elementwise_blocks(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 4096));
}

// The all-reduce benchmark's data. Element i of rank r is (i % 7) + 1 + r: small integers, so
// the sum over n ranks, n (i % 7 + 1) + n (n - 1) / 2, is exact in float whatever the order.
__global__ void fill_kernel(float* data, std::size_t count, int rank) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = static_cast<float>(i % 7 + 1 + rank);
  }
}

__global__ void count_wrong_kernel(const float* data, std::size_t count, int ranks, unsigned long long* wrong) {
  unsigned long long mine = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float want = static_cast<float>(ranks * static_cast<int>(i % 7 + 1) + ranks * (ranks - 1) / 2);
    if (data[i] != want) ++mine;
  }
  if (mine != 0) atomicAdd(wrong, mine);  // an integer count: any order gives the same total
}

// One thread polls the host's counter through PCIe (volatile: every read goes to host memory).
// On timeout it says so in release[1], so that the sample is not taken for a GPU-paced one.
__global__ void latch_kernel(volatile unsigned* release, unsigned ticket, unsigned long long timeout_ns) {
  const unsigned long long start = workbook::global_timer_ns();
  while (release[0] < ticket) {
    if (workbook::global_timer_ns() - start > timeout_ns) {  // the host never raised it: go on, do not hang
      release[1] = ticket;
      return;
    }
  }
}

// The floor under every launched exchange: a kernel that does nothing, one warp as the one-shot's.
__global__ void empty_kernel() {}

// The one-shot exchange `iterations` times in ONE kernel (one warp): no launch between two
// exchanges, only the stores across NVLink and the wait for the peers' (what the on-chip training
// pays per epoch, beside its grid barrier).
__global__ void one_shot_loop_kernel(const float* sums, float* total, OneShotView v, int iterations) {
  const float mine[3] = {sums[0], sums[1], sums[2]};
  const unsigned first = one_shot_next(v);
  float t[3] = {0.0f, 0.0f, 0.0f};
  for (int i = 0; i < iterations; ++i) {
    const unsigned s = first == 0 ? 0u : first + static_cast<unsigned>(i);
    one_shot_publish(v, s, mine);
    if (!one_shot_gather(v, s, mine, t)) return;
  }
  if (threadIdx.x != 0) return;
  one_shot_done(v, first + static_cast<unsigned>(iterations) - 1);
  total[0] = t[0];
  total[1] = t[1];
  total[2] = t[2];
}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>();
  CUDA_CHECK_LAUNCH();
}

void launch_one_shot_loop(const float* sums, float* total, const OneShotMailbox& box, int iterations,
                          cudaStream_t stream) {
  one_shot_loop_kernel<<<1, 32, 0, stream>>>(sums, total, box.view(), iterations);
  CUDA_CHECK_LAUNCH();
}

void launch_fill_allreduce_input(float* data, std::size_t count, int rank, cudaStream_t stream) {
  fill_kernel<<<elementwise_blocks(static_cast<std::int64_t>(count)), kThreads, 0, stream>>>(data, count, rank);
  CUDA_CHECK_LAUNCH();
}

// Holds `stream` until the host raises release[0] to at least `ticket`, or for timeout_ms at most,
// in which case it writes `ticket` to release[1]. `release` is two unsigneds of pinned host memory
// (with unified addressing the GPU reads and writes it by the same pointer). Work queued behind
// the latch then starts back to back, however slowly the host issued it: what a latency
// measurement needs when one call costs the host as long as one copy.
void launch_latch(unsigned* release, unsigned ticket, double timeout_ms, cudaStream_t stream) {
  latch_kernel<<<1, 1, 0, stream>>>(release, ticket, static_cast<unsigned long long>(timeout_ms * 1e6));
  CUDA_CHECK_LAUNCH();
}

void launch_count_wrong(const float* data, std::size_t count, int ranks, unsigned long long* wrong,
                        cudaStream_t stream) {
  count_wrong_kernel<<<elementwise_blocks(static_cast<std::int64_t>(count)), kThreads, 0, stream>>>(data, count,
                                                                                                      ranks, wrong);
  CUDA_CHECK_LAUNCH();
}

constexpr int kLatencyCopies = 100;       // back-to-back 4-byte copies per timed sample
constexpr double kLatchTimeoutMs = 1000.0;  // far longer than queuing 100 copies takes the host

// Enables (or disables) peer access both ways between a and b. Returns false when the driver says
// it cannot. cudaErrorPeerAccessAlreadyEnabled / NotEnabled are what the state already is: fine.
void set_peer_access(int a, int b, bool on) {
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    CUDA_CHECK(cudaSetDevice(from));
    const cudaError_t status = on ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
    if (status == cudaErrorPeerAccessAlreadyEnabled || status == cudaErrorPeerAccessNotEnabled) {
      (void)cudaGetLastError();  // clear it: the state is already what was asked
      continue;
    }
    CUDA_CHECK(status);
  }
}

// What each device holds for the copies: a source (initialised) and a destination.
struct PeerBuffers {
  std::unique_ptr<Stream> stream;
  DeviceBuffer<char> source, destination;
};

// The host side of launch_latch: [0] the counter the host raises, one ticket per sample; [1] the
// ticket of a latch that gave up waiting (0: none did).
struct LatchRelease {
  PinnedBuffer<unsigned> counter{2};
  unsigned issued = 0;
  LatchRelease() { counter.data()[0] = counter.data()[1] = 0; }
  void raise() { static_cast<volatile unsigned*>(counter.data())[0] = issued; }
  bool timed_out() const { return static_cast<const volatile unsigned*>(counter.data())[1] != 0; }
};

// Raises the latch when it leaves scope, also on an exception between launch and raise, so that
// no latch kernel is left polling memory that is about to be freed.
struct RaiseOnExit {
  LatchRelease& release;
  ~RaiseOnExit() { release.raise(); }
};

// Like time_on_stream, but each sample's work is queued behind a latch and released at once:
// the events bracket the GPU running the work back to back, not the host issuing it. Issuing a
// 4-byte peer copy takes the host a few microseconds, as long as the copy itself, so without the
// latch the GPU would wait on the host between copies and the "latency" would be the host's.
template <class Work>
Stats time_latched(cudaStream_t stream, Repeats repeats, LatchRelease& release, Work&& work) {
  std::vector<double> ms;
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  for (int i = 0; i < repeats.warmup + repeats.timed; ++i) {
    {
      const UnsyncedLaunches behind_latch;  // a debug build's per-launch sync would wait for the latch
      launch_latch(release.counter.data(), ++release.issued, kLatchTimeoutMs, stream);
      const RaiseOnExit raise{release};
      start.record(stream);
      work();
      stop.record(stream);
    }
    stop.synchronize();
    if (release.timed_out()) {
      throw std::runtime_error("topology: a latency sample's latch gave up after " +
                               std::to_string(static_cast<int>(kLatchTimeoutMs)) +
                               " ms: the host took that long to queue its copies, so the sample would time the host");
    }
    if (i >= repeats.warmup) ms.push_back(elapsed_ms(start, stop));
  }
  return summarize(std::move(ms));
}

}  // namespace

Topology measure_topology(const std::vector<int>& devices, std::size_t bytes, Repeats repeats) {
  NvtxRange range("topology");
  Topology t;
  t.devices = devices;
  t.bytes = bytes;
  const int n = static_cast<int>(devices.size());
  std::vector<PeerBuffers> buffers(devices.size());
  LatchRelease release;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, devices[i]));
    t.names.emplace_back(prop.name);
    std::vector<int> row;
    for (int j = 0; j < n; ++j) {
      int access = 1;
      if (i != j) CUDA_CHECK(cudaDeviceCanAccessPeer(&access, devices[i], devices[j]));
      row.push_back(access);
    }
    t.can_access.push_back(row);
    CUDA_CHECK(cudaSetDevice(devices[i]));
    buffers[i].stream = std::make_unique<Stream>();
    buffers[i].source = DeviceBuffer<char>(bytes);
    buffers[i].destination = DeviceBuffer<char>(bytes);
    CUDA_CHECK(cudaMemset(buffers[i].source.data(), i + 1, bytes));  // initcheck: copy only written bytes
    CUDA_CHECK(cudaMemset(buffers[i].destination.data(), 0, bytes));
    CUDA_CHECK(cudaDeviceSynchronize());  // the streams below are non-blocking: they do not wait for these
  }

  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      PeerLink link;
      link.from = devices[i];
      link.to = devices[j];
      link.can_access = t.can_access[i][j] != 0;
      if (link.can_access) {
        CUDA_CHECK(cudaDeviceGetP2PAttribute(&link.performance_rank, cudaDevP2PAttrPerformanceRank, link.from, link.to));
        int atomics = 0;
        CUDA_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, link.from, link.to));
        link.native_atomics = atomics != 0;
      }
      PeerBuffers& a = buffers[i];
      PeerBuffers& b = buffers[j];
      for (int mode = 0; mode < 2; ++mode) {
        const bool on = mode == 1;
        if (on && !link.can_access) continue;
        set_peer_access(link.from, link.to, on);
        CUDA_CHECK(cudaSetDevice(link.from));
        const cudaStream_t s = a.stream->get();
        const Stats one_way = time_on_stream(s, repeats, [&] {
          CUDA_CHECK(cudaMemcpyPeerAsync(b.destination.data(), link.to, a.source.data(), link.from, bytes, s));
        });
        link.one_way_gbps[mode] = gigabytes_per_second(static_cast<double>(bytes), one_way.median);
        // Both directions at once: b's stream forks from a's and joins it again, so the pair of
        // events on a's stream brackets both copies.
        Event fork, join;
        {
          CUDA_CHECK(cudaSetDevice(link.to));
          join = Event();
          CUDA_CHECK(cudaSetDevice(link.from));
        }
        const Stats both = time_on_stream(s, repeats, [&] {
          fork.record(s);
          CUDA_CHECK(cudaStreamWaitEvent(b.stream->get(), fork.get(), 0));
          CUDA_CHECK(cudaMemcpyPeerAsync(b.destination.data(), link.to, a.source.data(), link.from, bytes, s));
          CUDA_CHECK(cudaMemcpyPeerAsync(a.destination.data(), link.from, b.source.data(), link.to, bytes,
                                         b.stream->get()));
          join.record(b.stream->get());
          CUDA_CHECK(cudaStreamWaitEvent(s, join.get(), 0));
        });
        link.bidirectional_gbps[mode] = gigabytes_per_second(2.0 * static_cast<double>(bytes), both.median);
        const Stats latency = time_latched(s, repeats, release, [&] {
          for (int k = 0; k < kLatencyCopies; ++k) {
            CUDA_CHECK(cudaMemcpyPeerAsync(b.destination.data(), link.to, a.source.data(), link.from, 4, s));
          }
        });
        link.latency_us[mode] = 1e3 * latency.median / kLatencyCopies;
        CUDA_CHECK(cudaStreamSynchronize(b.stream->get()));
        if (on) set_peer_access(link.from, link.to, false);  // leave the default state behind
      }
      t.links.push_back(link);
    }
  }
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return t;
}

std::vector<AllreduceRow> measure_allreduce(const std::vector<int>& devices, const std::vector<std::size_t>& sizes,
                                            AllreduceTiming timing) {
  NvtxRange range("all-reduce sweep");
  const int n = static_cast<int>(devices.size());
  std::size_t largest = 0;
  for (std::size_t s : sizes) largest = std::max(largest, s);
  const std::size_t max_elements = largest / sizeof(float);

  struct Rank {
    std::unique_ptr<Stream> stream;
    DeviceBuffer<float> send, receive;
    DeviceBuffer<unsigned long long> wrong;
    ncclComm_t comm = nullptr;
  };
  std::vector<Rank> ranks(devices.size());
  for (int r = 0; r < n; ++r) {
    CUDA_CHECK(cudaSetDevice(devices[r]));
    ranks[r].stream = std::make_unique<Stream>();
    ranks[r].send = DeviceBuffer<float>(max_elements);
    ranks[r].receive = DeviceBuffer<float>(max_elements);
    ranks[r].wrong = DeviceBuffer<unsigned long long>(1);
    launch_fill_allreduce_input(ranks[r].send.data(), max_elements, r, ranks[r].stream->get());
    CUDA_CHECK(cudaMemsetAsync(ranks[r].receive.data(), 0, ranks[r].receive.bytes(), ranks[r].stream->get()));
  }
  // ncclCommInitAll's communicators: finalized (grouped) and destroyed at the end of the sweep;
  // aborted by the group's destructor if an exception leaves with all-reduces still queued.
  CommunicatorGroup comms = CommunicatorGroup::init_all(devices);
  for (int r = 0; r < n; ++r) ranks[r].comm = comms.get(static_cast<std::size_t>(r));

  auto all_reduce = [&](std::size_t elements) {
    NCCL_CHECK(ncclGroupStart());
    for (Rank& r : ranks) {
      NCCL_CHECK(ncclAllReduce(r.send.data(), r.receive.data(), elements, ncclFloat, ncclSum, r.comm,
                               r.stream->get()));
    }
    NCCL_CHECK(ncclGroupEnd());
  };
  auto synchronize = [&] {
    for (Rank& r : ranks) r.stream->synchronize();
  };

  std::vector<AllreduceRow> rows;
  for (std::size_t bytes : sizes) {
    const std::size_t elements = bytes / sizeof(float);
    AllreduceRow row;
    row.bytes = bytes;
    // Check first: one all-reduce, then every element of every rank against the exact sum.
    all_reduce(elements);
    for (int r = 0; r < n; ++r) {
      CUDA_CHECK(cudaSetDevice(devices[r]));
      CUDA_CHECK(cudaMemsetAsync(ranks[r].wrong.data(), 0, sizeof(unsigned long long), ranks[r].stream->get()));
      launch_count_wrong(ranks[r].receive.data(), elements, n, ranks[r].wrong.data(), ranks[r].stream->get());
    }
    synchronize();
    for (Rank& r : ranks) {
      unsigned long long wrong = 0;
      CUDA_CHECK(cudaMemcpy(&wrong, r.wrong.data(), sizeof wrong, cudaMemcpyDeviceToHost));
      row.wrong += wrong;
    }
    // Then time: warm-up, then batches of back-to-back all-reduces, the host waiting on all GPUs.
    for (int i = 0; i < timing.warmup; ++i) all_reduce(elements);
    synchronize();
    const Stats batch_ms = time_on_host({0, timing.batches}, [&] {
      for (int i = 0; i < timing.iterations; ++i) all_reduce(elements);
      synchronize();
    });
    row.time_us = Stats{1e3 * batch_ms.median / timing.iterations, 1e3 * batch_ms.min / timing.iterations,
                        1e3 * batch_ms.max / timing.iterations, 1e3 * batch_ms.mean / timing.iterations,
                        batch_ms.count};
    row.algbw_gbps = algorithm_bandwidth_gbps(static_cast<double>(bytes), row.time_us.median / 1e3);
    row.busbw_gbps = bus_bandwidth(row.algbw_gbps, n);
    rows.push_back(row);
  }
  synchronize();
  comms.finalize();
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return rows;
}

const char* form_name(ExchangeForm form) {
  switch (form) {
    case ExchangeForm::kLaunched: return "launched";
    case ExchangeForm::kGraphed: return "graph";
    case ExchangeForm::kInOneKernel: return "one_kernel";
    case ExchangeForm::kEmptyKernel: return "empty_kernel";
  }
  return "?";
}

ExchangeRow measure_exchange(const std::vector<int>& devices, ExchangeKind kind, AllreduceTiming timing,
                             double timeout_s, ExchangeForm form) {
  NvtxRange range("exchange alone");
  const int n = static_cast<int>(devices.size());
  const bool one_shot = kind == ExchangeKind::kOneShot;
  if (!one_shot && form != ExchangeForm::kLaunched) throw std::logic_error("measure_exchange: NCCL runs as launched kernels");
  const PeerAccess peer_access = one_shot ? PeerAccess(devices) : PeerAccess();
  struct Rank {
    std::unique_ptr<Stream> stream;
    DeviceBuffer<float> input, output;         // rank r's sums {r+1, 2(r+1), 3(r+1)}; the exchanged sums
    std::unique_ptr<OneShotMailbox> mailbox;   // one_shot
    std::unique_ptr<Event> start, stop;
    std::unique_ptr<GraphExec> batch;          // kGraphed, kEmptyKernel: one batch of `iterations`
    float* work = nullptr;                     // nccl: the all-reduce's buffer (output, or the window)
  };
  std::vector<Rank> ranks(devices.size());
  const DrainMailboxesFirst drain_first(ranks);  // runs before any rank's mailbox is freed
  for (int r = 0; r < n; ++r) {
    Rank& k = ranks[r];
    CUDA_CHECK(cudaSetDevice(devices[r]));
    k.stream = std::make_unique<Stream>();
    k.input = DeviceBuffer<float>(3);
    k.output = DeviceBuffer<float>(3);
    const float sums[3] = {1.0f * (r + 1), 2.0f * (r + 1), 3.0f * (r + 1)};
    CUDA_CHECK(cudaMemcpy(k.input.data(), sums, sizeof sums, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(k.output.data(), 0, k.output.bytes()));
    CUDA_CHECK(cudaDeviceSynchronize());  // a pageable copy may return before its DMA is done
    k.start = std::make_unique<Event>(EventTiming::kEnabled);
    k.stop = std::make_unique<Event>(EventTiming::kEnabled);
    k.work = k.output.data();
    if (one_shot) k.mailbox = std::make_unique<OneShotMailbox>(n, r, timeout_s);
  }
  ExchangeRow row;
  row.kind = kind;
  row.form = form;
  row.used = form == ExchangeForm::kEmptyKernel ? "empty kernel" : exchange_name(kind);
  row.gpus = n;
  CommunicatorGroup comms;
  SymmetricWindows windows;
  if (one_shot) {
    std::vector<MailboxSlot*> mailboxes;
    for (Rank& k : ranks) mailboxes.push_back(k.mailbox->local());
    for (Rank& k : ranks) k.mailbox->connect(mailboxes);
  } else {
    comms = CommunicatorGroup::init_all(devices);
    if (kind == ExchangeKind::kNcclSymmetric) {
      windows = SymmetricWindows::register_group(comms, devices);
      row.note = windows.note();
      if (!windows.active()) row.used = exchange_name(ExchangeKind::kNccl);
      for (int r = 0; r < n && windows.active(); ++r) ranks[r].work = windows.buffer(static_cast<std::size_t>(r));
    }
  }
  auto nccl_all_reduce = [&] {  // one collective over the devices of this thread
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      NCCL_CHECK(ncclAllReduce(ranks[r].work, ranks[r].work, 3, ncclFloat, ncclSum, comms.get(static_cast<std::size_t>(r)),
                               ranks[r].stream->get()));
    }
    NCCL_CHECK(ncclGroupEnd());
  };
  // A launch needs its device current: each GPU's part runs with it (NCCL sets its own).
  auto on_each = [&](auto&& work) {
    for (int r = 0; r < n; ++r) {
      CUDA_CHECK(cudaSetDevice(devices[r]));
      work(ranks[r]);
    }
  };
  auto exchange_once = [&] {
    if (!one_shot) return nccl_all_reduce();
    on_each([](Rank& k) { launch_one_shot_exchange(k.input.data(), k.output.data(), *k.mailbox, k.stream->get()); });
  };
  auto throw_if_failed = [&](const std::string& when) {
    for (Rank& k : ranks) {
      if (k.mailbox == nullptr) continue;
      if (auto why = k.mailbox->failure(0)) throw std::runtime_error(when + ": " + *why);
    }
  };

  // Check: one exchange of the inputs; every GPU must hold k * n(n+1)/2 exactly (small integers).
  on_each([](Rank& k) {
    CUDA_CHECK(cudaMemcpyAsync(k.work, k.input.data(), k.input.bytes(), cudaMemcpyDeviceToDevice, k.stream->get()));
  });
  {
    const UnsyncedLaunches waits_for_peers;  // one_shot: GPU 0's kernel waits for GPU 1's, launched after it
    if (form == ExchangeForm::kInOneKernel) {
      on_each([](Rank& k) { launch_one_shot_loop(k.input.data(), k.output.data(), *k.mailbox, 3, k.stream->get()); });
    } else {
      exchange_once();
    }
  }
  row.correct = true;
  const float triangle = 0.5f * static_cast<float>(n * (n + 1));
  on_each([&](Rank& k) {
    k.stream->synchronize();
    float got[3] = {0, 0, 0};
    CUDA_CHECK(cudaMemcpy(got, k.work, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 3; ++i) row.correct = row.correct && got[i] == triangle * static_cast<float>(i + 1);
  });
  throw_if_failed("exchange check");

  // One batch of `iterations` exchanges per GPU, as a CUDA graph where the form says so.
  if (form == ExchangeForm::kGraphed || form == ExchangeForm::kEmptyKernel) {
    on_each([&](Rank& k) {
      StreamCapture capture(k.stream->get());
      for (int i = 0; i < timing.iterations; ++i) {
        if (form == ExchangeForm::kEmptyKernel) launch_empty_kernel(k.stream->get());
        else launch_one_shot_exchange(k.input.data(), k.output.data(), *k.mailbox, k.stream->get());
      }
      k.batch = std::make_unique<GraphExec>(capture.end());
    });
  }
  auto enqueue_batch = [&] {
    switch (form) {
      case ExchangeForm::kLaunched:
        for (int i = 0; i < timing.iterations; ++i) exchange_once();
        return;
      case ExchangeForm::kGraphed:
      case ExchangeForm::kEmptyKernel:
        return on_each([](Rank& k) { k.batch->launch(k.stream->get()); });
      case ExchangeForm::kInOneKernel:
        return on_each([&](Rank& k) {
          launch_one_shot_loop(k.input.data(), k.output.data(), *k.mailbox, timing.iterations, k.stream->get());
        });
    }
  };

  // Time: every GPU's batch behind one latch, released when all are queued.
  LatchRelease release;
  std::vector<double> us;
  for (int b = 0; b < timing.warmup + timing.batches; ++b) {
    ++release.issued;
    {
      const UnsyncedLaunches behind_latch;  // a debug build's per-launch sync would wait for the latch
      const RaiseOnExit raise{release};
      on_each([&](Rank& k) {
        launch_latch(release.counter.data(), release.issued, kLatchTimeoutMs, k.stream->get());
        k.start->record(k.stream->get());
      });
      enqueue_batch();
      on_each([](Rank& k) { k.stop->record(k.stream->get()); });
    }
    double slowest_ms = 0.0;
    on_each([&](Rank& k) {
      k.stop->synchronize();
      slowest_ms = std::max(slowest_ms, static_cast<double>(elapsed_ms(*k.start, *k.stop)));
    });
    if (release.timed_out()) {
      throw std::runtime_error("exchange: a latch gave up after " + std::to_string(static_cast<int>(kLatchTimeoutMs)) +
                               " ms: the host took that long to queue the exchanges, so the sample would time the host");
    }
    throw_if_failed("exchange");
    if (b >= timing.warmup) us.push_back(1e3 * slowest_ms / timing.iterations);
  }
  row.time_us = summarize(std::move(us));
  windows.close();
  if (!one_shot) comms.finalize();
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return row;
}

ExchangeRow measure_one_shot_rank(Communicator& comm, const Watch& watch, int rank, int world,
                                  AllreduceTiming timing) {
  NvtxRange range("one-shot exchange alone, one rank");
  Stream stream;
  const cudaStream_t st = stream.get();
  DeviceBuffer<float> input(3), output(3), start_line(1);
  const float sums[3] = {1.0f * (rank + 1), 2.0f * (rank + 1), 3.0f * (rank + 1)};
  CUDA_CHECK(cudaMemcpy(input.data(), sums, sizeof sums, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(output.data(), 0, output.bytes()));
  CUDA_CHECK(cudaMemset(start_line.data(), 0, start_line.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());  // a pageable copy may return before its DMA is done
  // Its waits give up a little before the host's, so that the error names the rank that never came.
  OneShotMailbox mailbox(world, rank, 0.9 * watch.timeout_s);
  comm.watch_exchange([&mailbox] { mailbox.abort(); }, [&mailbox] { return mailbox.failure(0); });
  // The caller's communicator outlives this mailbox: drop its hooks first, and, when an exception
  // leaves, abort it first (which stops the mailbox's waits and NCCL's kernels) so that the
  // mailbox's destructor finds nothing of this GPU still running.
  struct Unhook {
    Communicator& comm;
    ~Unhook() {
      if (std::uncaught_exceptions() > 0) comm.abort();
      comm.watch_exchange({}, {});
    }
  } const unhook{comm};
  connect_over_nccl(mailbox, comm, st, watch);
  Event done, start(EventTiming::kEnabled), stop(EventTiming::kEnabled);

  ExchangeRow row;
  row.kind = ExchangeKind::kOneShot;
  row.form = ExchangeForm::kGraphed;
  row.used = exchange_name(row.kind);
  row.gpus = world;
  launch_one_shot_exchange(input.data(), output.data(), mailbox, st);  // the check: k * n(n+1)/2, exactly
  done.record(st);
  comm.wait_event(done.get(), "the checked exchange", watch);
  float got[3] = {0, 0, 0};
  CUDA_CHECK(cudaMemcpy(got, output.data(), sizeof got, cudaMemcpyDeviceToHost));
  const float triangle = 0.5f * static_cast<float>(world * (world + 1));
  row.correct = got[0] == triangle && got[1] == 2 * triangle && got[2] == 3 * triangle;

  std::unique_ptr<GraphExec> replay;
  {
    StreamCapture capture(st);
    for (int i = 0; i < timing.iterations; ++i) launch_one_shot_exchange(input.data(), output.data(), mailbox, st);
    replay = std::make_unique<GraphExec>(capture.end());
  }
  std::vector<double> us;
  for (int b = 0; b < timing.warmup + timing.batches; ++b) {
    comm.call(ncclAllReduce(start_line.data(), start_line.data(), 1, ncclFloat, ncclSum, comm.get(), st), "start line",
              watch);
    start.record(st);
    replay->launch(st);
    stop.record(st);
    comm.wait_event(stop.get(), "the exchanges", watch);
    if (b >= timing.warmup) us.push_back(1e3 * elapsed_ms(start, stop) / timing.iterations);
  }
  // Every rank unmaps the peers' mailboxes, then meets the others once more: no rank frees its
  // mailbox while another still maps it.
  mailbox.disconnect();
  comm.call(ncclAllReduce(start_line.data(), start_line.data(), 1, ncclFloat, ncclSum, comm.get(), st), "the last meeting",
            watch);
  done.record(st);
  comm.wait_event(done.get(), "the last meeting", watch);
  row.time_us = summarize(std::move(us));
  return row;
}

}  // namespace workbook::multi_gpu

// measure.cu: peer copies and NCCL all-reduce bandwidth, for multi_gpu_bench (the exchange alone
// is exchange_alone.cu).
#include "measure.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "bench_plan.h"
#include "latch.h"
#include "nccl_check.h"
#include "support/nccl_comm.h"
#include "nvtx.h"
#include "stream.h"

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

void launch_fill_allreduce_input(float* data, std::size_t count, int rank, cudaStream_t stream) {
  fill_kernel<<<elementwise_blocks(static_cast<std::int64_t>(count)), kThreads, 0, stream>>>(data, count, rank);
  CUDA_CHECK_LAUNCH();
}

void launch_count_wrong(const float* data, std::size_t count, int ranks, unsigned long long* wrong,
                        cudaStream_t stream) {
  count_wrong_kernel<<<elementwise_blocks(static_cast<std::int64_t>(count)), kThreads, 0, stream>>>(data, count,
                                                                                                      ranks, wrong);
  CUDA_CHECK_LAUNCH();
}

constexpr int kLatencyCopies = 100;  // back-to-back 4-byte copies per timed sample

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

// One ordered pair's copies with peer access off (mode 0) and on (mode 1): one way, both ways,
// and the latency of a 4-byte copy, into link's figures for that mode.
void measure_link_mode(PeerLink& link, int mode, PeerBuffers& a, PeerBuffers& b, std::size_t bytes, Repeats repeats,
                       LatchRelease& release) {
  CUDA_CHECK(cudaSetDevice(link.from));
  const cudaStream_t s = a.stream->get();
  const Stats one_way = time_on_stream(s, repeats, [&] {
    CUDA_CHECK(cudaMemcpyPeerAsync(b.destination.data(), link.to, a.source.data(), link.from, bytes, s));
  });
  link.one_way_gbps[mode] = gigabytes_per_second(static_cast<double>(bytes), one_way.median);
  // Both directions at once: b's stream forks from a's and joins it again, so the pair of events
  // on a's stream brackets both copies.
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
    CUDA_CHECK(cudaMemcpyPeerAsync(a.destination.data(), link.from, b.source.data(), link.to, bytes, b.stream->get()));
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
}

// What the driver says of the ordered pair: access, its performance rank, native atomics.
PeerLink describe_link(int from, int to, bool can_access) {
  PeerLink link;
  link.from = from;
  link.to = to;
  link.can_access = can_access;
  if (!can_access) return link;
  CUDA_CHECK(cudaDeviceGetP2PAttribute(&link.performance_rank, cudaDevP2PAttrPerformanceRank, from, to));
  int atomics = 0;
  CUDA_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, from, to));
  link.native_atomics = atomics != 0;
  return link;
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
      PeerLink link = describe_link(devices[i], devices[j], t.can_access[i][j] != 0);
      for (int mode = 0; mode < 2; ++mode) {
        const bool on = mode == 1;
        if (on && !link.can_access) continue;
        set_peer_access(link.from, link.to, on);
        measure_link_mode(link, mode, buffers[i], buffers[j], bytes, repeats, release);
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

}  // namespace workbook::multi_gpu

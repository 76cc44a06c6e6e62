// measure.h: what the GPUs of this machine can move between them: the peer-access matrix, peer
// copies (one way, both ways, latency) with peer access off and on, and NCCL all-reduce bandwidth
// (the epoch's 12-byte exchange alone is exchange_alone.h).
//
//   Topology t = measure_topology({0, 1, 2, 3}, 256 << 20, {2, 10});
//   std::vector<AllreduceRow> rows = measure_allreduce({0, 1}, allreduce_sizes(8, 1 << 30, 2), {5, 20, 5});
//
// The all-reduce check kernels are in measure.cu, the latch of the latency measurement in latch.cu.
#pragma once

#include "event_timer.h"
#include "stats.h"

#include <cstddef>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// One ordered pair of GPUs. Index 0 of each pair of numbers: peer access off (the driver stages
// the copy through host memory); index 1: on (the copy engines write the peer's memory directly).
struct PeerLink {
  int from = 0, to = 0;
  bool can_access = false;     // cudaDeviceCanAccessPeer(from, to)
  int performance_rank = -1;   // cudaDevP2PAttrPerformanceRank (lower is faster), -1 without access
  bool native_atomics = false; // cudaDevP2PAttrNativeAtomicSupported
  double one_way_gbps[2] = {0, 0};        // from -> to
  double bidirectional_gbps[2] = {0, 0};  // from -> to and to -> from at once, bytes of both
  double latency_us[2] = {0, 0};          // one 4-byte copy, median of repeated back-to-back copies
};

struct Topology {
  std::vector<int> devices;
  std::vector<std::string> names;
  std::vector<std::vector<int>> can_access;  // [i][j]: 1 if device i can access device j, i == j: 1
  std::vector<PeerLink> links;               // every ordered pair i != j
  std::size_t bytes = 0;                     // of each bandwidth copy
};

Topology measure_topology(const std::vector<int>& devices, std::size_t bytes, Repeats repeats);

struct AllreduceRow {
  std::size_t bytes = 0;             // per rank, float elements
  Stats time_us;                     // per all-reduce: each sample the mean of `iterations` back to back
  double algbw_gbps = 0.0;           // bytes / median time
  double busbw_gbps = 0.0;           // algbw * 2(n-1)/n
  unsigned long long wrong = 0;      // elements on any rank that differ from the exact sum
};

struct AllreduceTiming {
  int warmup = 5;       // all-reduces before the first timed batch (nccl-tests -w)
  int iterations = 20;  // all-reduces per timed batch (nccl-tests -n)
  int batches = 5;      // timed batches; the median batch is reported
};

// One process, one communicator per device (ncclCommInitAll), out-of-place float sum as
// nccl-tests' all_reduce_perf runs it; each size checked (every element of every rank) before
// it is timed. Time by the host clock around `iterations` all-reduces and a synchronize of every
// device, as nccl-tests does.
std::vector<AllreduceRow> measure_allreduce(const std::vector<int>& devices, const std::vector<std::size_t>& sizes,
                                            AllreduceTiming timing);

}  // namespace workbook::multi_gpu

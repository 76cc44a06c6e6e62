// measure.h: what the GPUs of this machine can move between them: the peer-access matrix, peer
// copies (one way, both ways, latency) with peer access off and on, NCCL all-reduce bandwidth,
// and the epoch's 12-byte exchange done the three ways of --exchange.
//
//   Topology t = measure_topology({0, 1, 2, 3}, 256 << 20, {2, 10});
//   std::vector<AllreduceRow> rows = measure_allreduce({0, 1}, allreduce_sizes(8, 1 << 30, 2), {5, 20, 5});
//
// The all-reduce check kernels and the latch of the latency measurement are in measure.cu.
#pragma once

#include "event_timer.h"
#include "exchange.h"
#include "nccl_comm.h"
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

// The epoch's exchange alone (3 floats summed over the GPUs), as the lesson's --exchange does it,
// in one process: nccl (ncclAllReduce in place), nccl_symmetric (the same on symmetric windows),
// one_shot (one kernel of one warp: publish, then gather). Checked first (every GPU's 3 sums
// exact); then timed on the GPUs: each GPU's batch of `iterations` exchanges is queued behind a
// latch that holds its stream until all are issued, between two events, so the time is the GPUs'
// (the exchange plus the gap between two kernels), not the one host thread's launch rate. A sample
// is the slowest GPU's time per exchange; the row has the median of `batches` samples.
//
// How a batch runs (one_shot only, but kLaunched):
//   kLaunched     one launch per exchange from this thread (NCCL's grouped calls; one_shot's kernels)
//   kGraphed      each GPU's batch captured once as a CUDA graph and replayed: the launch path's floor
//   kInOneKernel  every exchange of the batch inside one kernel: no launch between two exchanges
//   kEmptyKernel  a graph of empty one-warp kernels, no exchange at all: what a launch alone costs
enum class ExchangeForm { kLaunched, kGraphed, kInOneKernel, kEmptyKernel };
const char* form_name(ExchangeForm form);  // "launched", "graph", "one_kernel", "empty_kernel"

struct ExchangeRow {
  ExchangeKind kind = ExchangeKind::kNccl;
  ExchangeForm form = ExchangeForm::kLaunched;
  std::string used;          // what ran: nccl_symmetric falls back to nccl where NCCL declines
  std::string note;          // SymmetricWindows::note(), empty otherwise
  int gpus = 0;
  Stats time_us;             // per exchange
  bool correct = false;      // every GPU got the exact sums
};
ExchangeRow measure_exchange(const std::vector<int>& devices, ExchangeKind kind, AllreduceTiming timing,
                             double timeout_s, ExchangeForm form = ExchangeForm::kLaunched);

// The one-shot exchange alone in the DDP form: this process is rank `rank` of `world` on the
// current device, its mailbox mapped into the peers' address spaces over CUDA IPC
// (connect_over_nccl). Checked first (the exact sums); then `iterations` exchanges are captured in
// a CUDA graph, and a sample is one replay behind an all-reduce of one float on the same stream,
// so that every rank's replay starts as that all-reduce ends, within a microsecond or two of the
// others, not a host's reach apart. The row holds this rank's time per exchange.
ExchangeRow measure_one_shot_rank(Communicator& comm, const Watch& watch, int rank, int world,
                                  AllreduceTiming timing);

}  // namespace workbook::multi_gpu

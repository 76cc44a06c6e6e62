// fused_kernels.cuh: chapter 05's GPU side: the chapter-04 regression trained by seven variants,
// from 04's four kernels per step down to one launch for every epoch.
//
//   workbook::Stream stream;
//   workbook::fused::FusedRegression gpu(config, stream.get());   // data made on the GPU (04's kernel)
//   TrainingResult r = gpu.train(Variant::kLastBlock);             // one run, CUDA-event timed
//   double gbps = workbook::fused::measure_copy_gbps(1 << 30, stream.get());   // the ceiling
//
// Host-only declarations with plain types (g++ compiles this header); the kernels live in the .cu.
#pragma once

#include "compute_capability.h"
#include "device_buffer.h"
#include "regression.h"
#include "stream.h"

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace streams_events {
class TraceRecorder;  // chapter 03 (pipeline.h): a pair of CUDA events around each traced operation
}

namespace workbook::fused {

using regression::Config;
using regression::Dataset;
using regression::TrainingResult;

// The ladder. The numbers are the --variant values and the order of the README.
enum class Variant {
  kUnfused = 1,      // 04's kernels: forward, loss (2 kernels), backward (2 kernels), step
  kAtomic = 2,       // one fused kernel, a float atomicAdd per element, then an update kernel
  kBlockReduce = 3,  // one fused kernel writing one partial per block, then an update kernel
  kLastBlock = 4,    // one launch per epoch: the last block to finish reduces and steps
  kGraph = 5,        // variant 4, every epoch captured into one CUDA graph
  kStreams = 6,      // the article's split over K streams, joined with events before the update
  kPersistent = 7,   // one launch for all epochs: a thread-block cluster with a cluster barrier (cc 9.0+)
};
inline constexpr int kVariantCount = 7;
std::vector<Variant> all_variants();
const char* variant_name(Variant v);    // "unfused", "atomic", ...
const char* variant_detail(Variant v);  // one line for the report
// Variants whose float additions run in an order fixed by n and the GPU: bit-identical reruns.
bool is_deterministic(Variant v);

inline constexpr int kStreamCount = 4;  // variant 6: the article's four streams

// How a variant launches for a given size: what the report prints and the tests reason with.
struct LaunchShape {
  int blocks = 0;              // blocks of the main kernel (per stream for variant 6; the cluster for 7)
  int threads = 0;             // threads per block
  int launches_per_epoch = 0;  // kernel launches the host issues per epoch (0: one launch in all)
};

// Per-epoch time of each kernel of one run (milliseconds, medians over the epochs).
using Breakdown = std::vector<std::pair<std::string, double>>;

class FusedRegression {
 public:
  // Allocates on the current device and makes X and y with chapter 04's data kernel.
  FusedRegression(const Config& config, cudaStream_t stream);
  ~FusedRegression();
  FusedRegression(const FusedRegression&) = delete;
  FusedRegression& operator=(const FusedRegression&) = delete;

  Dataset copy_dataset() const;  // the GPU's data on the host, for the reference (synchronizes)

  // Whether this GPU can run the variant (7 needs thread-block clusters: compute capability 9.0+,
  // as device_compute_capability reports it). skip_reason says why not, in one line ("" if it can).
  bool supports(Variant v) const { return skip_reason(v).empty(); }
  std::string skip_reason(Variant v) const;
  LaunchShape shape(Variant v) const;

  // One run of every epoch from w = 0.83, b = 0.7645. No host synchronization inside the loop;
  // the losses stay on the GPU until the end. training_ms: CUDA events around the epoch loop.
  TrainingResult train(Variant v);

  // Variant 1 or 3 with an event between kernels: forward/loss/backward/step, or fused/update.
  Breakdown breakdown(Variant v);

  // For --trace, apart from any timed run: `warmup` epochs of variant v (1, 3, 4 or 6: see
  // epoch_trace.h), then `epochs` more with each GPU operation between a pair of CUDA events in
  // `trace`, on tracks first_track... (variant 6: its stream, then one per side stream). Waits for them.
  void trace_epochs(Variant v, int warmup, int epochs, streams_events::TraceRecorder& trace, int first_track);

  std::int64_t train_points() const { return train_points_; }

 private:
  void prepare(Variant v);  // variant 6's streams, variant 5's graph: made on first use
  // `trace`, when given, gets a pair of events around each operation (--trace only; never timed).
  void launch_epoch(Variant v, int epoch, std::vector<Event>* marks, streams_events::TraceRecorder* trace = nullptr,
                    int first_track = 0);
  void launch_all_epochs(Variant v);
  void build_graph();
  int cluster_blocks() const;

  Config config_;
  std::int64_t train_points_ = 0;
  std::int64_t test_points_ = 0;
  cudaStream_t stream_;
  int multiprocessors_ = 0;
  ComputeCapability capability_;
  int cluster_code_arch_ = 0;  // __CUDA_ARCH__ / 10 of variant 7's kernel as loaded (90 on Hopper builds)
  int max_cluster_ = 0;  // 0: no clusters on this GPU
  DeviceBuffer<float> x_, y_, pred_, partials_, atomic_slots_, params_, losses_, test_mse_;
  DeviceBuffer<unsigned> done_count_;
  PinnedBuffer<float> host_;
  std::vector<Stream> side_streams_;  // variant 6, made on first use
  std::vector<Event> side_done_;
  Event params_ready_;
  cudaGraph_t graph_ = nullptr;  // variant 5, captured on first use
  cudaGraphExec_t graph_exec_ = nullptr;
};

// Device-to-device copy of `bytes` (warm-up, then the median of 10): GB/s counting the bytes read
// plus the bytes written, as PyTorch's and nvbandwidth's copy figures do.
double measure_copy_gbps(std::size_t bytes, cudaStream_t stream);

}  // namespace workbook::fused

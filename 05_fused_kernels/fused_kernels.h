// fused_kernels.h: what chapter 05's lesson (fused_kernels.cu) offers its bench and its tests:
// the ladder of variants, and one GPU's training state with a launcher for every kernel.
//
//   workbook::Stream stream;
//   workbook::fused::FusedTraining gpu(config, stream.get());   // X and y made on the GPU
//   TrainingResult r = gpu.train(Variant::kLastBlock);           // every epoch, CUDA-event timed
//
// Host-only declarations with plain types (g++ compiles this header); the kernels live in the .cu.
#pragma once

#include "common_options.h"
#include "compute_capability.h"
#include "device_buffer.h"
#include "gpu_memory.h"
#include "on_chip_room.h"
#include "regression_problem.h"
#include "stream.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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
  kOnChip = 8,       // one cooperative launch for all epochs on every SM, the data kept on chip
};
inline constexpr int kVariantCount = 8;
inline constexpr int kStreamCount = 4;      // variant 6: the article's four streams
inline constexpr int kClusterThreads = 512;  // variant 7: threads per block of the cluster
// Variant 8's kOnChipThreads and kOnChipRegisterFloat4: common/on_chip_room.h (chapter 06 uses them too).

std::vector<Variant> all_variants();
const char* variant_name(Variant v);  // "unfused", "atomic", ...
std::string label(Variant v);         // "4 last_block"
// Variants whose float additions run in an order fixed by n and the GPU: bit-identical reruns.
bool is_deterministic(Variant v);
// "all" or a comma-separated list of 1..8 ("1,3,7"). Throws UsageError naming --variant.
std::vector<Variant> parse_variants(const std::string& text);

// The flags both programs of the chapter take: the problem's (common/regression_cli.h), and
// --variant, --repeats and --copy-mib (the size of the ceiling's device-to-device copy).
struct LadderOptions {
  Config config;
  std::string variant_list = "all";
  int repeats = 0;  // timed runs per variant (the caller's default)
  int copy_mib = 1024;
  std::vector<Variant> variants;  // set by finish_ladder_options
};
void add_ladder_options(CLI::App& app, LadderOptions& options, const std::string& repeats_help);
// After parsing: --quick's small sizes where a flag was not given (20,011 points, 20 epochs, a
// 64 MiB copy, 2 repeats), then every value checked (UsageError naming the flag).
void finish_ladder_options(const CLI::App& app, bool quick, LadderOptions& options);

// Bytes one epoch must read (X and y of the training points, 4 bytes each), and what a run of
// `epochs` in `ms` achieves against that: GB/s (1e9 bytes per second) and microseconds per epoch.
double bytes_read_per_epoch(std::int64_t train_points);
double achieved_gbps(std::int64_t train_points, int epochs, double ms);
double us_per_epoch(int epochs, double ms);

// How a variant launches for a given size: what the report prints and the tests reason with.
struct LaunchShape {
  int blocks = 0;              // blocks of the main kernel (per stream for 6; the cluster for 7; the grid for 8)
  int threads = 0;             // threads per block
};

// Variant 8's room (OnChipCapacity: how many training points the GPU can hold on chip for all
// epochs) is common/on_chip_room.h's: chapter 06 trains on the chips of several GPUs with it.

// Variant 6's segments: K contiguous pieces, each a multiple of 4 points long (16-byte aligned).
struct Segment {
  std::int64_t first;
  std::int64_t count;
};

// Variant 4's epoch on any data, one launch: `blocks` blocks over the n points of x and y (16-byte
// aligned) add their sums into partials (3 rows of `blocks`); the last block to finish adds all of
// them in block order, writes losses[epoch] and steps params = {w, b} by lr. *done_count must be 0
// before the first launch; the last block sets it back to 0. FusedTraining::last_block_epoch is
// this on its own buffers; exercise 05 last_block (exercises/) is checked against it.
void launch_last_block_epoch(const float* x, const float* y, std::int64_t n, float* params, float* losses, int epoch,
                             float lr, int blocks, float* partials, unsigned* done_count, cudaStream_t stream);

// Variant 5's capture: `epochs` calls of epoch(e), e = 0, 1, ..., each queuing one epoch on
// `stream`, recorded by stream capture into one graph (the caller owns it: instantiate it once,
// launch it for every run). Nothing runs during the call. Exercise 05 graph asks for this.
cudaGraph_t capture_epochs(int epochs, const std::function<void(int)>& epoch, cudaStream_t stream);

class FusedTraining {
 public:
  // Allocates on the current device and makes X and y there (common/regression_data.h).
  // Throws GpuMemoryError naming --points when bytes_needed(config) is more than is free.
  FusedTraining(const Config& config, cudaStream_t stream);
  static ByteCount bytes_needed(const Config& config);
  ~FusedTraining();
  FusedTraining(const FusedTraining&) = delete;
  FusedTraining& operator=(const FusedTraining&) = delete;

  Dataset copy_dataset() const;  // the GPU's data on the host, for the reference (synchronizes)

  // Whether this GPU can run the variant (7 needs thread-block clusters: compute capability 9.0+,
  // as device_compute_capability reports it). skip_reason says why not, in one line ("" if it can).
  bool supports(Variant v) const { return skip_reason(v).empty(); }
  std::string skip_reason(Variant v) const;
  LaunchShape shape(Variant v) const;
  // The kernels one epoch of variant v launches, counted by CUDA: the epoch is captured into a
  // graph (not run) and its kernel nodes counted. 0 for variants 5, 7 and 8: one launch in all.
  int kernels_per_epoch(Variant v);

  // One run of every epoch from w = 0.83, b = 0.7645. No host synchronization inside the loop;
  // the losses stay on the GPU until the end. training_ms: CUDA events around the epoch loop.
  TrainingResult train(Variant v);

  // The pieces of an epoch, each queued on the training stream (side streams for variant 6's
  // segments): what train() runs, and what the bench puts its events around.
  void reset_params();                                     // w = 0.83, b = 0.7645
  void unfused_forward();                                  // variant 1
  void unfused_loss(int epoch);
  void unfused_backward();
  void unfused_step();
  void atomic_epoch(int epoch);                            // variant 2: sums kernel + update kernel
  // Variants 3 and 6: `blocks` blocks over `points`, their sums into partials columns
  // [column, column + blocks) of three rows `stride` apart.
  void block_partials(Segment points, int blocks, int column, int stride, cudaStream_t stream);
  void update(int epoch, int partial_count, int stride);   // variants 3, 6
  void last_block_epoch(int epoch);                        // variants 4, 5
  void streams_epoch(int epoch);                           // variant 6
  void persistent_all_epochs();                            // variant 7
  void on_chip_all_epochs();                               // variant 8
  const OnChipCapacity& on_chip_capacity() const { return on_chip_.capacity; }
  // "132 blocks x 512 threads hold 17.3 MB in registers + 30.7 MB in shared memory = 6000000
  // training points; this run's 4000000 need 32 MB"
  std::string on_chip_text() const;
  void epoch(Variant v, int epoch);                        // one epoch of variants 1-4 and 6

  Segment segment(int k) const;  // variant 6's k-th piece of the training points
  cudaStream_t stream() const { return stream_; }
  cudaStream_t side_stream(int k);  // variant 6's streams, made on first use
  std::int64_t train_points() const { return train_points_; }
  int epochs() const { return config_.epochs; }

 private:
  void capture_graph();
  void probe_clusters();  // sets cluster_code_arch_ and max_cluster_
  void probe_on_chip();   // sets on_chip_
  int cluster_blocks() const;

  Config config_;
  std::int64_t train_points_ = 0;
  std::int64_t test_points_ = 0;
  cudaStream_t stream_;
  int multiprocessors_ = 0;
  ComputeCapability capability_;
  int cluster_code_arch_ = 0;  // __CUDA_ARCH__ / 10 of variant 7's kernel as loaded (90 on Hopper builds)
  int max_cluster_ = 0;        // 0: no clusters on this GPU
  OnChipRoom on_chip_;  // variant 8's room on this GPU (or why it has none)
  DeviceBuffer<float> x_, y_, pred_, partials_, grads_, atomic_slots_, params_, losses_, test_mse_;
  DeviceBuffer<float> on_chip_partials_;  // variant 8: 2 epochs x 3 sums x its blocks
  DeviceBuffer<unsigned> done_count_;
  std::vector<Stream> side_streams_;
  std::vector<Event> side_done_;
  Event params_ready_;
  cudaGraph_t graph_ = nullptr;  // variant 5, captured on first use
  cudaGraphExec_t graph_exec_ = nullptr;
};

}  // namespace workbook::fused

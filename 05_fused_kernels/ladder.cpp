// ladder.cpp: the bookkeeping of chapter 05's variants, in plain C++: their names and the
// --variant list, the bandwidth arithmetic, what a GPU supports, one epoch's dispatch to its
// variant and variant 5's graph of them, the kernels an epoch launches, variant 6's segments.
#include "fused_kernels.h"

#include "ceil_div.h"
#include "cli.h"
#include "cuda_check.h"
#include "format.h"
#include "nvtx.h"
#include "regression_cli.h"
#include "regression_data.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace workbook::fused {
namespace {


}  // namespace

Dataset FusedTraining::copy_dataset() const {
  return regression::copy_dataset_to_host(x_.data(), y_.data(), config_.points);
}

std::string FusedTraining::skip_reason(Variant v) const {
  if (v == Variant::kOnChip) return on_chip_.fits(train_points_) ? "" : on_chip_.does_not_fit(train_points_);
  if (v != Variant::kPersistent || max_cluster_ > 0) return "";
  if (!capability_.at_least(9, 0)) {
    return "needs thread-block clusters and distributed shared memory, compute capability 9.0 (Hopper) or newer; "
           "this GPU is " + capability_.text();
  }
  if (cluster_code_arch_ < 90) {
    return "this build has no sm_90 code for it (its code here was compiled for compute capability " +
           std::to_string(cluster_code_arch_ / 10) + "." + std::to_string(cluster_code_arch_ % 10) +
           "): build with -arch=sm_90 or the default architectures";
  }
  return "no thread-block cluster of 1 to 16 blocks of 512 threads fits on this GPU now";
}

// One epoch of variant v, queued on the stream: the dispatch of the ladder.
void FusedTraining::epoch(Variant v, int epoch) {
  switch (v) {
    case Variant::kUnfused:  // 6 launches: forward, loss (2), backward (2), step
      unfused_forward();
      unfused_loss(epoch);
      unfused_backward();
      unfused_step();
      return;
    case Variant::kAtomic: return atomic_epoch(epoch);
    case Variant::kBlockReduce: {
      const int blocks = shape(v).blocks;
      block_partials({0, train_points_}, blocks, 0, blocks, stream_);
      return update(epoch, blocks, blocks);
    }
    case Variant::kLastBlock: return last_block_epoch(epoch);
    case Variant::kStreams: return streams_epoch(epoch);
    case Variant::kGraph:       // replays variant 4's epochs: train() launches the graph
    case Variant::kPersistent:  // all epochs in one launch: persistent_all_epochs()
    case Variant::kOnChip:      // all epochs in one launch: on_chip_all_epochs()
      break;
  }
  throw std::logic_error(std::string("epoch(): variant ") + variant_name(v) + " has no single epoch");
}

// Every epoch's launches recorded into one graph: the capture queues nothing to run (stream.h).
cudaGraph_t capture_epochs(int epochs, const std::function<void(int)>& epoch, cudaStream_t stream) {
  StreamCapture capture(stream);
  for (int e = 0; e < epochs; ++e) epoch(e);
  return capture.end();
}

// Variant 5: variant 4's launches for every epoch, captured once into one graph.
void FusedTraining::capture_graph() {
  NvtxRange range("capture graph");
  graph_ = capture_epochs(config_.epochs, [this](int e) { last_block_epoch(e); }, stream_);
  CUDA_CHECK(cudaGraphInstantiate(&graph_exec_, graph_, 0));
  CUDA_CHECK(cudaGraphUpload(graph_exec_, stream_));
}

// Counted by CUDA rather than written down: one epoch captured into a graph, its kernel nodes.
// Variants 5, 7 and 8 launch nothing per epoch (one graph launch, or one kernel, for them all): 0.
int FusedTraining::kernels_per_epoch(Variant v) {
  if (v == Variant::kGraph || v == Variant::kPersistent || v == Variant::kOnChip) return 0;
  for (int k = 0; k < kStreamCount; ++k) side_stream(k);  // made before the capture, not in it
  StreamCapture capture(stream_);
  epoch(v, 0);  // recorded, not run: nothing on the GPU changes
  cudaGraph_t graph = capture.end();
  const int kernels = kernel_nodes(graph);
  CUDA_CHECK(cudaGraphDestroy(graph));
  return kernels;
}

Segment FusedTraining::segment(int k) const {
  const std::int64_t length = ceil_div(ceil_div(train_points_, kStreamCount), 4) * 4;
  const std::int64_t first = std::min(train_points_, k * length);
  return {first, std::min(length, train_points_ - first)};
}

cudaStream_t FusedTraining::side_stream(int k) {
  while (side_streams_.size() < kStreamCount) {
    side_streams_.emplace_back();
    side_done_.emplace_back();
  }
  return side_streams_.at(static_cast<std::size_t>(k)).get();
}

std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (int i = 1; i <= kVariantCount; ++i) v.push_back(static_cast<Variant>(i));
  return v;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kUnfused: return "unfused";
    case Variant::kAtomic: return "atomic";
    case Variant::kBlockReduce: return "block_reduce";
    case Variant::kLastBlock: return "last_block";
    case Variant::kGraph: return "graph";
    case Variant::kStreams: return "streams";
    case Variant::kPersistent: return "persistent";
    case Variant::kOnChip: return "on_chip";
  }
  return "?";
}

std::string label(Variant v) { return std::to_string(static_cast<int>(v)) + " " + variant_name(v); }

bool is_deterministic(Variant v) { return v != Variant::kAtomic; }

std::vector<Variant> parse_variants(const std::string& text) {
  if (text == "all") return all_variants();
  std::vector<Variant> variants;
  for (const std::string& part : list_items("--variant", text)) {
    if (part.size() != 1 || part[0] < '1' || part[0] > '0' + kVariantCount) {
      throw UsageError("--variant must be 'all' or a list of 1.." + std::to_string(kVariantCount) + ", got '" +
                       text + "'");
    }
    const Variant v = static_cast<Variant>(part[0] - '0');
    if (std::find(variants.begin(), variants.end(), v) != variants.end()) {
      throw UsageError("--variant: '" + text + "' lists " + part + " twice");
    }
    variants.push_back(v);
  }
  return variants;
}

void add_ladder_options(CLI::App& app, LadderOptions& o, const std::string& repeats_help) {
  regression::add_problem_options(app, o.config);
  app.add_option("--variant", o.variant_list, "all, or a list of 1-8 (e.g. 1,4,8)")->type_name("V");
  app.add_option("--repeats", o.repeats, repeats_help)->type_name("R");
  add_size_option(app, "--copy-mib", o.copy_mib, "size in MiB of the device-to-device copy that gives the ceiling");
}

void finish_ladder_options(const CLI::App& app, bool quick, LadderOptions& o) {
  auto unset = [&](const char* flag) { return quick && app.count(flag) == 0; };
  if (unset("--points")) o.config.points = 20'011;  // odd, not a block multiple
  if (unset("--epochs")) o.config.epochs = 20;
  if (unset("--copy-mib")) o.copy_mib = 64;
  if (unset("--repeats")) o.repeats = 2;
  regression::validate(o.config);
  regression::refuse_idle_seed(app, o.config);
  o.variants = parse_variants(o.variant_list);
  require_at_least("--repeats", o.repeats, 1);
  require_at_least("--copy-mib", o.copy_mib, 1);
  require_at_most("--copy-mib", o.copy_mib, 16384);
}

double bytes_read_per_epoch(std::int64_t train_points) { return 8.0 * static_cast<double>(train_points); }

double achieved_gbps(std::int64_t train_points, int epochs, double ms) {
  return bytes_read_per_epoch(train_points) * epochs / (ms * 1e6);
}

double us_per_epoch(int epochs, double ms) { return ms * 1e3 / epochs; }

}  // namespace workbook::fused

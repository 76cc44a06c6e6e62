// pipeline.h: the schedules of chapter 03. The same chunks of work (copy in, compute, copy out)
// are put on the GPU's queues in different ways; only the order of the queues changes.
//
//   Batch batch{h_in.data(), h_out.data(), d_in.data(), d_out.data(), chunk_elements, chunks, iterations};
//   enqueue_serial(batch, stream);                   // one stream, one stage at a time
//   MultiStreamPipeline four(4);                     // chunk c goes to stream c % 4
//   four.enqueue(batch);                             // forks from four.origin() and joins back
//   TwoStreamPipeline article(chunks);               // transfer stream + compute stream + events
//   article.enqueue(batch, Ordering::kEventWait);
//
// Every enqueue returns at once (the host only queues work); wait on origin() / compute() to see
// the results. Host buffers must be pinned, or cudaMemcpyAsync is no longer asynchronous.
#pragma once

#include "trace.h"
#include "stream.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace streams_events {

using workbook::TraceOp;
using workbook::TraceRecorder;

// The whole workload: `chunks` chunks of `chunk_elements` floats, pinned on the host, and room
// for all of them on the device (so no chunk ever waits for a buffer to be recycled).
struct Batch {
  const float* host_in = nullptr;
  float* host_out = nullptr;
  float* dev_in = nullptr;
  float* dev_out = nullptr;
  std::size_t chunk_elements = 0;
  int chunks = 0;
  int iterations = 0;

  std::size_t offset(int chunk) const { return static_cast<std::size_t>(chunk) * chunk_elements; }
  std::size_t chunk_bytes() const { return chunk_elements * sizeof(float); }
  std::size_t total_elements() const { return static_cast<std::size_t>(chunks) * chunk_elements; }
};

// Each stage of one chunk, on the given stream.
void enqueue_copy_in(const Batch& b, int chunk, cudaStream_t stream);
void enqueue_compute(const Batch& b, int chunk, cudaStream_t stream);
void enqueue_copy_out(const Batch& b, int chunk, cudaStream_t stream);

// Stage at a time on one stream: every copy in, then every kernel, then every copy out. This is
// what code without streams does, and the time the overlap is measured against.
void enqueue_serial(const Batch& b, cudaStream_t stream);

// Fork: streams[1..] wait for what streams[0] has queued so far. Join: streams[0] waits for
// everything the others queued. Both are GPU-side waits (cudaStreamWaitEvent): the host never blocks.
class ForkJoin {
 public:
  explicit ForkJoin(std::size_t width) : joined_(width) {}
  void fork(const std::vector<cudaStream_t>& streams);
  void join(const std::vector<cudaStream_t>& streams);

 private:
  workbook::Event forked_;
  std::vector<workbook::Event> joined_;
};

// Chunk c goes to stream c % K, all three stages of it: the stream's own order keeps each chunk
// correct, and chunks on different streams overlap.
class MultiStreamPipeline {
 public:
  explicit MultiStreamPipeline(int streams);
  void enqueue(const Batch& b, TraceRecorder* trace = nullptr, int first_track = 0);
  cudaStream_t origin() const { return handles_.front(); }
  int width() const { return static_cast<int>(handles_.size()); }

 private:
  std::vector<workbook::Stream> streams_;
  std::vector<cudaStream_t> handles_;
  ForkJoin fork_join_;
};

enum class Ordering {
  kEventWait,  // correct: the compute stream waits for the event recorded after each copy
  kNone,       // the bug: no wait, so the kernel may read a chunk before its copy has landed
};

// The article's pattern: a transfer stream copies chunks in, a compute stream computes and copies
// them out, and one event per chunk ("copied") orders the two. `producer_delay_ns` makes the
// transfer stream late on purpose (a spin kernel before each copy) so that a missing wait shows.
class TwoStreamPipeline {
 public:
  explicit TwoStreamPipeline(int chunks);
  void enqueue(const Batch& b, Ordering ordering, long long producer_delay_ns = 0,
               TraceRecorder* trace = nullptr, int first_track = 0);
  cudaStream_t compute() const { return compute_.get(); }
  cudaStream_t transfer() const { return transfer_.get(); }

 private:
  workbook::Stream transfer_;
  workbook::Stream compute_;
  std::vector<workbook::Event> copied_;
  ForkJoin fork_join_{2};
};

}  // namespace streams_events

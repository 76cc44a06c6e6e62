// pipeline.cpp: how each schedule puts the chunks on the streams.
#include "pipeline.h"

#include "cuda_check.h"
#include "streams_events.cuh"

#include <stdexcept>

namespace streams_events {
namespace {

// Runs `enqueue` bare, or between two timing events when a trace is being recorded.
template <class Enqueue>
void maybe_traced(TraceRecorder* trace, cudaStream_t stream, int track, const char* stage, const char* category,
                  int chunk, Enqueue&& enqueue) {
  if (trace == nullptr) {
    enqueue();
    return;
  }
  trace->op(stream, track, std::string(stage) + " " + std::to_string(chunk), category, enqueue);
}

}  // namespace

void enqueue_copy_in(const Batch& b, int chunk, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(b.dev_in + b.offset(chunk), b.host_in + b.offset(chunk), b.chunk_bytes(),
                             cudaMemcpyHostToDevice, stream));
}

void enqueue_compute(const Batch& b, int chunk, cudaStream_t stream) {
  launch_transform(b.dev_in + b.offset(chunk), b.dev_out + b.offset(chunk), b.chunk_elements, b.iterations,
                   stream);
}

void enqueue_copy_out(const Batch& b, int chunk, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(b.host_out + b.offset(chunk), b.dev_out + b.offset(chunk), b.chunk_bytes(),
                             cudaMemcpyDeviceToHost, stream));
}

void enqueue_serial(const Batch& b, cudaStream_t stream) {
  for (int c = 0; c < b.chunks; ++c) enqueue_copy_in(b, c, stream);
  for (int c = 0; c < b.chunks; ++c) enqueue_compute(b, c, stream);
  for (int c = 0; c < b.chunks; ++c) enqueue_copy_out(b, c, stream);
}

void ForkJoin::fork(const std::vector<cudaStream_t>& streams) {
  forked_.record(streams.front());
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaStreamWaitEvent(streams[k], forked_.get(), 0));
}

void ForkJoin::join(const std::vector<cudaStream_t>& streams) {
  if (streams.size() > joined_.size()) throw std::invalid_argument("ForkJoin::join: more streams than events");
  for (std::size_t k = 1; k < streams.size(); ++k) {
    joined_[k].record(streams[k]);
    CUDA_CHECK(cudaStreamWaitEvent(streams.front(), joined_[k].get(), 0));
  }
}

MultiStreamPipeline::MultiStreamPipeline(int streams)
    : streams_(static_cast<std::size_t>(streams)), fork_join_(static_cast<std::size_t>(streams)) {
  if (streams < 1) throw std::invalid_argument("MultiStreamPipeline needs at least one stream");
  for (const workbook::Stream& s : streams_) handles_.push_back(s.get());
}

void MultiStreamPipeline::enqueue(const Batch& b, TraceRecorder* trace, int first_track) {
  if (trace != nullptr) trace->mark_origin(origin());  // before the fork, so every stream follows it
  fork_join_.fork(handles_);
  for (int c = 0; c < b.chunks; ++c) {
    const int k = c % width();
    const cudaStream_t s = handles_[k];
    const int track = first_track + k;
    maybe_traced(trace, s, track, "H2D", "copy_in", c, [&] { enqueue_copy_in(b, c, s); });
    maybe_traced(trace, s, track, "compute", "compute", c, [&] { enqueue_compute(b, c, s); });
    maybe_traced(trace, s, track, "D2H", "copy_out", c, [&] { enqueue_copy_out(b, c, s); });
  }
  fork_join_.join(handles_);
}

TwoStreamPipeline::TwoStreamPipeline(int chunks) : copied_(static_cast<std::size_t>(chunks)) {}

void TwoStreamPipeline::enqueue(const Batch& b, Ordering ordering, long long producer_delay_ns,
                                TraceRecorder* trace, int first_track) {
  if (b.chunks > static_cast<int>(copied_.size())) {
    throw std::invalid_argument("TwoStreamPipeline: batch has more chunks than events");
  }
  const std::vector<cudaStream_t> both{compute(), transfer()};
  if (trace != nullptr) trace->mark_origin(compute());
  fork_join_.fork(both);
  const int compute_track = first_track;
  const int transfer_track = first_track + 1;
  for (int c = 0; c < b.chunks; ++c) {
    // Transfer stream: (late producer) copy chunk c, then mark it copied.
    if (producer_delay_ns > 0) {
      maybe_traced(trace, transfer(), transfer_track, "late producer", "delay", c,
                   [&] { launch_spin(producer_delay_ns, nullptr, transfer()); });
    }
    maybe_traced(trace, transfer(), transfer_track, "H2D", "copy_in", c, [&] { enqueue_copy_in(b, c, transfer()); });
    copied_[c].record(transfer());

    // Compute stream: wait for that mark on the GPU (the host does not stop here), then work.
    if (ordering == Ordering::kEventWait) CUDA_CHECK(cudaStreamWaitEvent(compute(), copied_[c].get(), 0));
    maybe_traced(trace, compute(), compute_track, "compute", "compute", c, [&] { enqueue_compute(b, c, compute()); });
    maybe_traced(trace, compute(), compute_track, "D2H", "copy_out", c, [&] { enqueue_copy_out(b, c, compute()); });
  }
  fork_join_.join(both);
}

}  // namespace streams_events

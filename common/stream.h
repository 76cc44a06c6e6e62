// stream.h: owners of a CUDA stream and a CUDA event, and a stream capture into a graph.
//
//   workbook::Stream copy_stream;                        // a new non-blocking stream
//   workbook::Event copied;                              // timing disabled: cheapest to wait on
//   CUDA_CHECK(cudaEventRecord(copied.get(), copy_stream.get()));
//   CUDA_CHECK(cudaStreamWaitEvent(compute_stream.get(), copied.get(), 0));
//   StreamCapture capture(stream); ...launches...; cudaGraph_t graph = capture.end();  // recorded, not run
//   GraphExec replay(graph); replay.launch(stream);      // run it, as often as wanted
#pragma once

#include "cuda_check.h"

#include <utility>
#include <vector>

namespace workbook {

// A stream created with cudaStreamNonBlocking, so that it does not wait for work on the legacy
// default stream (stream 0), which is what PyTorch's side streams do as well.
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  // A moved-from Stream holds nullptr, which CUDA reads as the legacy default stream: do not use it.
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

enum class EventTiming { kDisabled, kEnabled };

class Event {
 public:
  explicit Event(EventTiming timing = EventTiming::kDisabled) {
    const unsigned flags = timing == EventTiming::kEnabled ? cudaEventDefault : cudaEventDisableTiming;
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
  }
  ~Event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      if (event_ != nullptr) (void)cudaEventDestroy(event_);
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) const { CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// What is queued on `stream` from construction to end() is recorded into a CUDA graph, not run
// (cudaStreamBeginCapture, thread-local mode, then cudaStreamEndCapture). An exception that leaves
// the scope first ends the capture and drops the partial graph, so that the stream can be used
// again. The debug preset's per-launch sync is off meanwhile (UnsyncedLaunches, cuda_check.h).
class StreamCapture {
 public:
  explicit StreamCapture(cudaStream_t stream) : stream_(stream) {
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }
  ~StreamCapture() {
    if (!capturing_) return;
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(stream_, &partial);  // "capture invalidated" after a failed launch
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();  // that answer is not news to whoever catches the exception
  }
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;

  // The graph captured so far; the caller owns it (cudaGraphDestroy).
  cudaGraph_t end() {
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    return graph;
  }

 private:
  cudaStream_t stream_;
  UnsyncedLaunches unsynced_;
  bool capturing_ = true;
};

// How many kernel launches a captured graph holds (its kernel nodes; copies and waits not counted).
inline int kernel_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  int kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    kernels += type == cudaGraphNodeTypeKernel ? 1 : 0;
  }
  return kernels;
}

// A captured graph made launchable (cudaGraphInstantiate, with the graph's device current); the
// graph itself is freed at once, the executable graph with this object.
class GraphExec {
 public:
  explicit GraphExec(cudaGraph_t graph) {
    const cudaError_t e = cudaGraphInstantiate(&exec_, graph, 0);
    (void)cudaGraphDestroy(graph);
    CUDA_CHECK(e);
  }
  ~GraphExec() {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  }
  GraphExec(GraphExec&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& other) noexcept {
    if (this != &other) {
      if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
      exec_ = std::exchange(other.exec_, nullptr);
    }
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  void launch(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Milliseconds between two recorded, completed events (both created with EventTiming::kEnabled).
inline float elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

}  // namespace workbook

// exchange_alone.cu: any exchange plug-in checked and timed in one process (measure_exchange), and
// the one-shot exchange in one process per GPU (measure_one_shot_rank).
#include "exchange_alone.h"

#include "cuda_check.h"
#include "latch.h"
#include "nccl_check.h"
#include "nvtx.h"
#include "one_shot_exchange.h"
#include "symmetric_windows.h"

#include <nccl.h>

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace workbook::multi_gpu {
namespace {

// Rank r's sums {r+1, 2(r+1), 3(r+1)}: small integers, so their sum over n GPUs, k n(n+1)/2, is
// exact in float whatever the order.
void input_sums(int rank, float out[3]) {
  for (int k = 0; k < 3; ++k) out[k] = static_cast<float>((k + 1) * (rank + 1));
}

bool holds_sums(const float got[3], int gpus, int rank, bool summed) {
  float want[3];
  input_sums(rank, want);
  const float triangle = 0.5f * static_cast<float>(gpus * (gpus + 1));
  for (int k = 0; k < 3; ++k) {
    if (got[k] != (summed ? triangle * static_cast<float>(k + 1) : want[k])) return false;
  }
  return true;
}

std::vector<ExchangeLane> make_lanes(const std::vector<int>& devices) {
  std::vector<ExchangeLane> lanes(devices.size());
  for (std::size_t r = 0; r < devices.size(); ++r) {
    ExchangeLane& lane = lanes[r];
    lane.device = devices[r];
    lane.rank = static_cast<int>(r);
    CUDA_CHECK(cudaSetDevice(lane.device));
    lane.stream = std::make_unique<Stream>();
    lane.own = DeviceBuffer<float>(3);
    lane.sums = lane.own.data();
  }
  return lanes;
}

// One exchange of the inputs (a batch of 3 inside one kernel, for that form); true when every GPU
// holds what it should.
bool check_exchange(ExchangePlugin& x, std::vector<ExchangeLane>& lanes, ExchangeForm form) {
  for (ExchangeLane& lane : lanes) {
    float sums[3];
    input_sums(lane.rank, sums);
    CUDA_CHECK(cudaSetDevice(lane.device));
    CUDA_CHECK(cudaMemcpy(lane.sums, sums, sizeof sums, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // a pageable copy may return before its DMA is done
  }
  {
    const UnsyncedLaunches waits_for_peers;  // one_shot: GPU 0's kernel waits for GPU 1's, launched after it
    if (form == ExchangeForm::kInOneKernel) {
      for (ExchangeLane& lane : lanes) {
        CUDA_CHECK(cudaSetDevice(lane.device));
        x.enqueue_in_one_kernel(lane, 3);
      }
    } else {
      x.enqueue(lanes);
    }
  }
  bool correct = true;
  for (ExchangeLane& lane : lanes) {
    CUDA_CHECK(cudaSetDevice(lane.device));
    lane.stream->synchronize();
    float got[3] = {0, 0, 0};
    CUDA_CHECK(cudaMemcpy(got, lane.sums, sizeof got, cudaMemcpyDeviceToHost));
    correct = correct && holds_sums(got, static_cast<int>(lanes.size()), lane.rank, x.sums_over_gpus());
  }
  x.throw_if_failed("exchange check");
  return correct;
}

// What one timed batch queues on the lanes: `iterations` exchanges in the form asked for.
class Batch {
 public:
  Batch(ExchangePlugin& x, std::vector<ExchangeLane>& lanes, ExchangeForm form, int iterations)
      : x_(x), lanes_(lanes), form_(form), iterations_(iterations) {
    if (form == ExchangeForm::kGraphed && !x.per_lane()) throw std::logic_error("measure_exchange: no graph of this exchange");
    if (form == ExchangeForm::kInOneKernel && !x.in_one_kernel()) throw std::logic_error("measure_exchange: not in one kernel");
    if (form != ExchangeForm::kGraphed) return;
    for (ExchangeLane& lane : lanes) {  // each GPU's batch captured once
      CUDA_CHECK(cudaSetDevice(lane.device));
      StreamCapture capture(lane.stream->get());
      for (int i = 0; i < iterations; ++i) x.enqueue_lane(lane);
      graphs_.emplace_back(capture.end());
    }
  }
  void enqueue() {
    if (form_ == ExchangeForm::kLaunched) {
      for (int i = 0; i < iterations_; ++i) x_.enqueue(lanes_);
      return;
    }
    for (std::size_t r = 0; r < lanes_.size(); ++r) {
      CUDA_CHECK(cudaSetDevice(lanes_[r].device));
      if (form_ == ExchangeForm::kGraphed) graphs_[r].launch(lanes_[r].stream->get());
      else x_.enqueue_in_one_kernel(lanes_[r], iterations_);
    }
  }

 private:
  ExchangePlugin& x_;
  std::vector<ExchangeLane>& lanes_;
  ExchangeForm form_;
  int iterations_;
  std::vector<GraphExec> graphs_;
};

// The batches, every GPU's behind one latch released once all are queued: us per exchange, each
// sample the slowest GPU's.
Stats time_batches(const ExchangePlugin& x, std::vector<ExchangeLane>& lanes, Batch& batch, AllreduceTiming timing) {
  std::vector<Event> start, stop;
  for (const ExchangeLane& lane : lanes) {
    CUDA_CHECK(cudaSetDevice(lane.device));  // an event belongs to the device current when it is made
    start.emplace_back(EventTiming::kEnabled);
    stop.emplace_back(EventTiming::kEnabled);
  }
  LatchRelease release;
  std::vector<double> us;
  for (int b = 0; b < timing.warmup + timing.batches; ++b) {
    ++release.issued;
    {
      const UnsyncedLaunches behind_latch;  // a debug build's per-launch sync would wait for the latch
      const RaiseOnExit raise{release};
      for (std::size_t r = 0; r < lanes.size(); ++r) {
        CUDA_CHECK(cudaSetDevice(lanes[r].device));
        launch_latch(release.counter.data(), release.issued, kLatchTimeoutMs, lanes[r].stream->get());
        start[r].record(lanes[r].stream->get());
      }
      batch.enqueue();
      for (std::size_t r = 0; r < lanes.size(); ++r) {
        CUDA_CHECK(cudaSetDevice(lanes[r].device));
        stop[r].record(lanes[r].stream->get());
      }
    }
    double slowest_ms = 0.0;
    for (std::size_t r = 0; r < lanes.size(); ++r) {
      stop[r].synchronize();
      slowest_ms = std::max(slowest_ms, static_cast<double>(elapsed_ms(start[r], stop[r])));
    }
    if (release.timed_out()) {
      throw std::runtime_error("exchange: a latch gave up after " + std::to_string(static_cast<int>(kLatchTimeoutMs)) +
                               " ms: the host took that long to queue the exchanges, so the sample would time the host");
    }
    x.throw_if_failed("exchange");
    if (b >= timing.warmup) us.push_back(1e3 * slowest_ms / timing.iterations);
  }
  return summarize(std::move(us));
}

// The rank's three input sums into `sums`, on the GPU before any exchange reads them.
void load_input_sums(float* sums, int rank) {
  float input[3];
  input_sums(rank, input);
  CUDA_CHECK(cudaMemcpy(sums, input, sizeof input, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());  // a pageable copy may return before its DMA is done
}

// After one exchange queued on `st`: waits for it (through the communicator's watch, so that a
// rank that never comes is an error, not a hang), reads the sums back and checks them exactly.
bool exchanged_sums_hold(const float* sums, int world, int rank, cudaStream_t st, Communicator& comm,
                         const Watch& watch) {
  Event done;
  done.record(st);
  comm.wait_event(done.get(), "the checked exchange", watch);
  float got[3] = {0, 0, 0};
  CUDA_CHECK(cudaMemcpy(got, sums, sizeof got, cudaMemcpyDeviceToHost));
  return holds_sums(got, world, rank, true);
}

}  // namespace

const char* form_name(ExchangeForm form) {
  switch (form) {
    case ExchangeForm::kLaunched: return "launched";
    case ExchangeForm::kGraphed: return "graph";
    case ExchangeForm::kInOneKernel: return "one_kernel";
  }
  return "?";
}

ExchangeRow measure_exchange(const std::vector<int>& devices, const std::string& exchange, ExchangeForm form,
                             AllreduceTiming timing, double timeout_s) {
  NvtxRange range("exchange alone");
  std::vector<ExchangeLane> lanes = make_lanes(devices);
  // Made after the lanes, so gone before them: its destructor stops its waits on every GPU first.
  const std::unique_ptr<ExchangePlugin> x = make_exchange_plugin(exchange, timeout_s);
  x->connect(lanes);
  ExchangeRow row;
  row.exchange = exchange;
  row.launch = x->launch_name(form);
  row.used = x->used();
  row.note = x->note();
  row.gpus = static_cast<int>(devices.size());
  row.correct = check_exchange(*x, lanes, form);
  Batch batch(*x, lanes, form, timing.iterations);
  row.time_us = time_batches(*x, lanes, batch, timing);
  x->close();
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return row;
}

ExchangeRow measure_one_shot_rank(Communicator& comm, const Watch& watch, int rank, int world,
                                  AllreduceTiming timing) {
  NvtxRange range("one-shot exchange alone, one rank");
  Stream stream;
  const cudaStream_t st = stream.get();
  DeviceBuffer<float> sums(3), start_line(1);
  CUDA_CHECK(cudaMemset(start_line.data(), 0, start_line.bytes()));
  load_input_sums(sums.data(), rank);
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
  row.exchange = row.used = exchange_name(ExchangeKind::kOneShot);
  row.launch = form_name(ExchangeForm::kGraphed);
  row.gpus = world;
  launch_one_shot_exchange(sums.data(), sums.data(), mailbox, st);  // the check: k * n(n+1)/2, exactly
  row.correct = exchanged_sums_hold(sums.data(), world, rank, st, comm, watch);

  std::unique_ptr<GraphExec> replay;
  {
    StreamCapture capture(st);
    for (int i = 0; i < timing.iterations; ++i) launch_one_shot_exchange(sums.data(), sums.data(), mailbox, st);
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

ExchangeRow measure_nccl_rank(Communicator& comm, const Watch& watch, int rank, int world, AllreduceTiming timing,
                              bool symmetric) {
  NvtxRange range("NCCL exchange alone, one rank, CUDA graph");
  Stream stream;
  const cudaStream_t st = stream.get();
  DeviceBuffer<float> own(3);
  SymmetricWindows windows;  // closed below, before the caller's communicator finalizes
  if (symmetric) windows = SymmetricWindows::register_rank(comm, st, watch);
  float* sums = windows.active() ? windows.buffer(0) : own.data();
  ExchangeRow row;
  row.exchange = exchange_name(symmetric ? ExchangeKind::kNcclSymmetric : ExchangeKind::kNccl);
  row.used = exchange_name(windows.active() ? ExchangeKind::kNcclSymmetric : ExchangeKind::kNccl);
  row.note = windows.note();
  row.launch = form_name(ExchangeForm::kGraphed);
  row.gpus = world;
  load_input_sums(sums, rank);
  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  comm.call(ncclAllReduce(sums, sums, 3, ncclFloat, ncclSum, comm.get(), st), "the checked exchange", watch);
  row.correct = exchanged_sums_hold(sums, world, rank, st, comm, watch);

  std::unique_ptr<GraphExec> replay;
  {
    StreamCapture capture(st);
    for (int i = 0; i < timing.iterations; ++i) {
      comm.call(ncclAllReduce(sums, sums, 3, ncclFloat, ncclSum, comm.get(), st), "a captured all-reduce", watch);
    }
    replay = std::make_unique<GraphExec>(capture.end());
  }
  std::vector<double> us;
  for (int b = 0; b < timing.warmup + timing.batches; ++b) {
    replay->launch(st);  // lines the ranks up: its last all-reduce ends on every rank at once
    start.record(st);
    replay->launch(st);
    stop.record(st);
    comm.wait_event(stop.get(), "the exchanges", watch);
    if (b >= timing.warmup) us.push_back(1e3 * elapsed_ms(start, stop) / timing.iterations);
  }
  windows.close();
  row.time_us = summarize(std::move(us));
  return row;
}

}  // namespace workbook::multi_gpu

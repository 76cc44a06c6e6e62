// exchange_alone.h: the epoch's exchange alone (3 floats summed over the GPUs), measured the way
// nccl-tests measures a collective: each way of exchanging is a plug-in (its name, how it
// connects the GPUs, how it queues one exchange, how a failed wait is reported), and one
// function checks and times any of them.
//
//   ExchangeRow r = measure_exchange({0, 1}, "one_shot", ExchangeForm::kGraphed, {5, 20, 5}, 30.0);
//
// The plug-ins (exchange_plugins.cu):
//   nccl            ncclAllReduce in place, one grouped call over the devices of this thread
//   nccl_symmetric  the same on buffers registered as NCCL symmetric windows (or nccl, with why)
//   one_shot        the lesson's hand-written exchange: one warp per GPU, a slot in every mailbox
//   none            an empty one-warp kernel: no exchange at all, what a launch alone costs
#pragma once

#include "device_buffer.h"
#include "support/exchange.h"
#include "measure.h"
#include "one_shot_exchange.h"
#include "support/nccl_comm.h"
#include "stats.h"
#include "stream.h"

#include <memory>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// How a batch of exchanges is queued:
//   kLaunched     one launch per exchange from this thread (NCCL's grouped calls; one kernel per GPU)
//   kGraphed      each GPU's batch captured once as a CUDA graph and replayed: the launch path's floor
//   kInOneKernel  every exchange of the batch inside one kernel: no launch between two exchanges
enum class ExchangeForm { kLaunched, kGraphed, kInOneKernel };
const char* form_name(ExchangeForm form);  // "launched", "graph", "one_kernel"

// What one GPU holds for the exchange: its stream, and the 3 sums the exchange replaces, in
// place, by the sum over every GPU (`sums` points into `own`, or into a plug-in's buffer).
struct ExchangeLane {
  int device = 0;
  int rank = 0;
  std::unique_ptr<Stream> stream;
  DeviceBuffer<float> own;
  float* sums = nullptr;
};

class ExchangePlugin {
 public:
  virtual ~ExchangePlugin() = default;
  // Connects the lanes' GPUs (communicators, windows, mailboxes); may point lane.sums elsewhere.
  virtual void connect(std::vector<ExchangeLane>& lanes) = 0;
  // Queues one exchange on every lane's stream (each launch with its lane's device current). The
  // default, for a per_lane plug-in: enqueue_lane on each lane in turn.
  virtual void enqueue(std::vector<ExchangeLane>& lanes);
  // Whether one lane's part can be queued alone (then a batch can be captured as a graph per GPU),
  // and queues it, with the lane's device current (nothing else: it may be inside a capture).
  virtual bool per_lane() const { return false; }
  virtual void enqueue_lane(ExchangeLane& lane);
  // Whether a batch can run inside one kernel, and queues it (the lane's device current).
  virtual bool in_one_kernel() const { return false; }
  virtual void enqueue_in_one_kernel(ExchangeLane& lane, int iterations);
  // false for "none", which sums nothing: its check is that every GPU's sums are left as they were.
  virtual bool sums_over_gpus() const { return true; }
  // Throws, naming `when`, when a wait on a GPU gave up.
  virtual void throw_if_failed(const std::string& when) const { (void)when; }
  // After the last exchange: windows deregistered, communicators finalized.
  virtual void close() {}
  // What ran (nccl_symmetric falls back to nccl where NCCL declines) and why, in one line.
  virtual std::string used() const = 0;
  virtual std::string note() const { return {}; }
  // The row's "launch": the form's name, or what the plug-in queues instead.
  virtual std::string launch_name(ExchangeForm form) const { return form_name(form); }
};

// The plug-in of that name: "nccl", "nccl_symmetric", "one_shot" or "none" (std::logic_error for
// any other). one_shot's waits give up after timeout_s.
std::unique_ptr<ExchangePlugin> make_exchange_plugin(const std::string& name, double timeout_s);

// The one-shot exchange (one_shot_exchange.h) in its two halves, two kernels of one warp: publish
// `sums` into every peer's mailbox; gather every rank's (this one's from `sums`) into `total`. The
// mailbox exercise's answer (exercises/answers/mailbox_lesson.cu), and the tests, which order the
// halves of two ranks by hand.
void launch_one_shot_publish(const float* sums, const OneShotMailbox& box, cudaStream_t stream);
void launch_one_shot_gather(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream);

struct ExchangeRow {
  std::string exchange;      // the plug-in's name
  std::string launch;        // launch_name(form)
  std::string used;          // what ran
  std::string note;          // why, when something else ran
  int gpus = 0;
  Stats time_us;             // per exchange
  bool correct = false;      // every GPU got the exact sums
};

// One process, one lane per device. Checked first (every GPU's 3 sums exact: rank r gives
// {r+1, 2(r+1), 3(r+1)}); then timed on the GPUs: each GPU's batch of `iterations` exchanges is
// queued behind a latch that holds its stream until all are issued, between two events, so the
// time is the GPUs' (the exchange plus the gap between two kernels), not the one host thread's
// launch rate. A sample is the slowest GPU's time per exchange; the row has the median of
// `batches` samples. std::logic_error for a form the plug-in cannot run.
ExchangeRow measure_exchange(const std::vector<int>& devices, const std::string& exchange, ExchangeForm form,
                             AllreduceTiming timing, double timeout_s);

// The one-shot exchange alone in the DDP form: this process is rank `rank` of `world` on the
// current device, its mailbox mapped into the peers' address spaces over CUDA IPC
// (connect_over_nccl). Checked first (the exact sums); then `iterations` exchanges are captured in
// a CUDA graph, and a sample is one replay behind an all-reduce of one float on the same stream,
// so that every rank's replay starts as that all-reduce ends, within a microsecond or two of the
// others, not a host's reach apart. The row holds this rank's time per exchange.
ExchangeRow measure_one_shot_rank(Communicator& comm, const Watch& watch, int rank, int world,
                                  AllreduceTiming timing);

// NCCL at its best for 12 bytes, as NVIDIA measures its symmetric kernels: one process per GPU,
// `iterations` ncclAllReduce calls captured once as a CUDA graph (on symmetric windows when
// `symmetric` and NCCL accepts them), each sample one replay right behind another, which lines the
// ranks up (its last all-reduce ends within microseconds on every rank). Run it with
// NCCL_GRAPH_MIXING_SUPPORT=0 (run_exchange_rank sets it): no graph then shares the communicator
// with a launch still in flight. Checked first (the exact sums); the row holds this rank's time.
ExchangeRow measure_nccl_rank(Communicator& comm, const Watch& watch, int rank, int world, AllreduceTiming timing,
                              bool symmetric);

}  // namespace workbook::multi_gpu

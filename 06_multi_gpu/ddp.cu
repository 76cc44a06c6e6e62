// ddp.cu: chapter 06's DistributedDataParallel analog (the lesson's part 3). This process is one
// rank and drives one GPU; the ranks meet only in NCCL. A launcher starts one copy of the program
// per GPU (multi_gpu_bench's, as torchrun does, or mpirun) and hands each its rank and NCCL's
// unique id; the rank makes its communicator from them (ncclCommInitRank: the init_process_group
// of PyTorch), trains its shard, and all-reduces the three sums every epoch.
//
// What a rank must never do is wait forever: a peer that died leaves NCCL's kernels spinning on
// this GPU. So the host never blocks in CUDA here: it waits with comm.wait_event (support/
// nccl_comm.h), which polls the GPU, NCCL's errors, the launcher's pipe and a clock, and aborts the
// communicator when a peer is gone. That is the one call in the loop that keeps it safe.
#include "multi_gpu.h"

#include "cuda_check.h"
#include "bench/symmetric_windows.h"
#include "nccl_check.h"
#include "nvtx.h"
#include "one_shot_exchange.h"
#include "stream.h"

#include <algorithm>
#include <optional>

namespace workbook::multi_gpu {
namespace {

// How many epochs the host may run ahead of the GPU before it waits (polling): enough that the
// GPU never starves, few enough that a hang is seen within an epoch or two, and so few collectives
// in flight that a blocking ncclAllReduce never waits for room in NCCL's queue.
constexpr int kEpochsInFlight = 4;

// --exchange one_shot: every rank's mailbox mapped here (CUDA IPC handles all-gathered over NCCL),
// and a wait on the GPU that gives up is an error of the communicator's; nccl_symmetric: the sums
// in a registered window.
void connect_exchange(ExchangeKind kind, OneShotMailbox* mailbox, Communicator& comm, SymmetricWindows& windows,
                      Replica& replica, int epochs, cudaStream_t stream, const Watch& watch, ParallelRun& out) {
  if (kind == ExchangeKind::kOneShot) {
    comm.watch_exchange([mailbox] { mailbox->abort(); }, [mailbox, epochs] { return mailbox->failure(epochs); });
    connect_over_nccl(*mailbox, comm, stream, watch);
    replica.use_one_shot(mailbox);
    out.exchange_note = kOneShotNote + std::string(" (CUDA IPC)");
  } else if (kind == ExchangeKind::kNcclSymmetric) {
    windows = SymmetricWindows::register_rank(comm, stream, watch);
    out.exchange_note = windows.note();
    if (windows.active()) replica.use_sums_buffer(windows.buffer(0));
    else out.exchange = exchange_name(ExchangeKind::kNccl);
  }
}

// Every rank's figures to every rank: one all-gather of a few doubles each (w and b as floats
// widened exactly, so their bits survive). Pinned host memory: a copy from pageable memory would
// block the host outside the watch.
std::vector<RankResult> all_gather_results(const RankResult& mine, const Problem& problem, int world, int repeats,
                                           Communicator& comm, cudaStream_t stream, const Watch& watch) {
  constexpr int kFields = 8;
  PinnedBuffer<double> host_fields(kFields), all(static_cast<std::size_t>(kFields) * world);
  const double fields[kFields] = {static_cast<double>(mine.rank), static_cast<double>(mine.device), mine.w, mine.b,
                                  mine.test_mse, mine.training_ms.median, mine.training_ms.min, mine.training_ms.max};
  std::copy(fields, fields + kFields, host_fields.data());
  DeviceBuffer<double> send(kFields), gathered(all.size());
  CUDA_CHECK(cudaMemcpyAsync(send.data(), host_fields.data(), send.bytes(), cudaMemcpyHostToDevice, stream));
  comm.call(ncclAllGather(send.data(), gathered.data(), kFields, ncclFloat64, comm.get(), stream), "result all-gather",
            watch);
  CUDA_CHECK(cudaMemcpyAsync(all.data(), gathered.data(), gathered.bytes(), cudaMemcpyDeviceToHost, stream));
  Event done;
  done.record(stream);
  comm.wait_event(done.get(), "the result all-gather", watch);
  std::vector<RankResult> ranks;
  for (int k = 0; k < world; ++k) {
    const double* f = all.data() + static_cast<std::size_t>(k) * kFields;
    RankResult r;
    r.rank = static_cast<int>(f[0]);
    r.device = static_cast<int>(f[1]);
    r.w = static_cast<float>(f[2]);
    r.b = static_cast<float>(f[3]);
    r.test_mse = f[4];
    r.training_ms.median = f[5];
    r.training_ms.min = f[6];
    r.training_ms.max = f[7];
    r.training_ms.count = static_cast<std::size_t>(repeats);
    r.epoch_us = 1e3 * f[5] / problem.config.epochs;
    r.shard_points = shard_of(problem.train_points, world, k).count;
    ranks.push_back(r);
  }
  return ranks;
}

// One rank's timed run: the same three steps as DataParallel's, for this rank's GPU alone, the
// host at most kEpochsInFlight epochs ahead of it and never blocked inside CUDA (a dead peer must
// not hang it). Returns the run's milliseconds, between its two events.
struct RankLoop {
  Replica& replica;
  Communicator& comm;
  const Watch& watch;
  cudaStream_t st;
  int epochs;
  bool one_shot, on_chip;
  Event start{EventTiming::kEnabled}, stop{EventTiming::kEnabled};
  std::vector<Event> progress = std::vector<Event>(static_cast<std::size_t>(epochs));  // the host's pacing marks

  double run() {
    replica.enqueue_reset();
    start.record(st);
    if (on_chip) replica.enqueue_all_epochs_on_chip();  // every epoch, the exchange inside
    for (int e = 0; e < epochs && !on_chip; ++e) {
      if (one_shot) {
        replica.enqueue_epoch_one_shot(e);  // sums, every rank's mailbox, the sum in rank order, the step
      } else {
        replica.enqueue_sums();
        comm.call(ncclAllReduce(replica.sums(), replica.sums(), 3, ncclFloat, ncclSum, comm.get(), st), "all-reduce",
                  watch);
        replica.enqueue_step(e);
      }
      progress[e].record(st);
      if (e >= kEpochsInFlight) {
        comm.wait_event(progress[e - kEpochsInFlight].get(), "epoch " + std::to_string(e - kEpochsInFlight), watch);
      }
    }
    stop.record(st);
    comm.wait_event(stop.get(), on_chip ? "the epochs on chip" : "the last epochs", watch);
    return static_cast<double>(elapsed_ms(start, stop));
  }
};

}  // namespace

ParallelRun train_ddp_rank(const Problem& problem, const DdpSetup& setup, int repeats) {
  NvtxRange range("distributed data parallel");
  const int epochs = problem.config.epochs;
  const Watch& watch = setup.watch;
  CUDA_CHECK(cudaSetDevice(setup.device));
  Stream stream;
  const cudaStream_t st = stream.get();
  const Shard train = shard_of(problem.train_points, setup.world_size, setup.rank);
  const Shard test = shard_of(problem.test_points, setup.world_size, setup.rank, problem.train_points);
  require_gpu_memory("--points " + std::to_string(problem.config.points) + " (rank " + std::to_string(setup.rank) +
                         "'s shard of " + std::to_string(setup.world_size) + ")",
                     Replica::bytes_needed(problem, train, test));
  Replica replica(problem, train, test, st);
  // one_shot: this rank's mailbox, made before the communicator so that it outlives it (an abort
  // of the communicator first stops the mailbox's waits on the GPU). Its waits give up a little
  // before the host's would, so that the error names the rank that never came.
  std::optional<OneShotMailbox> mailbox;
  if (setup.on_chip && setup.exchange != ExchangeKind::kOneShot) throw std::logic_error("train_ddp_rank: on_chip needs one_shot");
  if (setup.exchange == ExchangeKind::kOneShot) mailbox.emplace(setup.world_size, setup.rank, 0.9 * watch.timeout_s);
  // This rank's communicator: every rank calls this with the same unique id; it returns when all joined.
  Communicator comm = Communicator::init_rank(setup.id, setup.world_size, setup.rank, watch, setup.nonblocking);
  ParallelRun out;
  out.mode = "ddp";
  out.exchange = exchange_name(setup.exchange);
  SymmetricWindows windows;  // nccl_symmetric: the sums in a registered window
  connect_exchange(setup.exchange, mailbox ? &*mailbox : nullptr, comm, windows, replica, epochs, st, watch, out);
  out.on_chip = setup.on_chip;
  if (setup.on_chip) replica.use_on_chip(&*mailbox);  // OnChipDoesNotFit above the room

  RankLoop loop{replica, comm, watch, st, epochs, mailbox.has_value(), setup.on_chip};
  loop.run();  // the warm-up, untimed (every run gives the same bits: what is read after the last is checked)
  std::vector<double> runs_ms;
  for (int i = 0; i < repeats; ++i) runs_ms.push_back(loop.run());

  replica.enqueue_test_sums();
  comm.call(ncclAllReduce(replica.test_sums(), replica.test_sums(), 3, ncclFloat, ncclSum, comm.get(), st),
            "test all-reduce", watch);
  Event done;
  done.record(st);
  comm.wait_event(done.get(), "the test all-reduce", watch);
  if (mailbox) mailbox->disconnect();  // unmapped before the all-gather, so no rank frees a mapped mailbox
  const RankResult mine = rank_result(setup.rank, setup.device, replica, problem, runs_ms);
  out.ranks = all_gather_results(mine, problem, setup.world_size, repeats, comm, st, watch);
  out.losses = replica.read(epochs).losses;  // every rank's losses are the same bits
  windows.close();
  comm.finalize(watch);
  return out;
}

}  // namespace workbook::multi_gpu

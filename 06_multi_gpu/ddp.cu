// ddp.cu: chapter 06's DistributedDataParallel analog. This process is one rank and drives one
// GPU; the ranks meet only in NCCL. A launcher starts one copy of the program per GPU
// (multi_gpu_bench's, as torchrun does, or mpirun) and hands each its rank and NCCL's unique id;
// the rank makes its communicator from them (ncclCommInitRank: the init_process_group of
// PyTorch), trains its shard, and all-reduces the three sums every epoch.
//
// What a rank must never do is wait forever: a peer that died leaves NCCL's kernels spinning on
// this GPU. So the host never blocks in CUDA here: it waits with comm.wait_event (support/
// nccl_comm.h), which polls the GPU, NCCL's errors, the launcher's pipe and a clock, and aborts the
// communicator when a peer is gone. That is the one call in the loop that keeps it safe.
#include "multi_gpu.h"

#include "cuda_check.h"
#include "nccl_check.h"
#include "nvtx.h"
#include "stream.h"

namespace workbook::multi_gpu {
namespace {

// How many epochs the host may run ahead of the GPU before it waits (polling): enough that the
// GPU never starves, few enough that a hang is seen within an epoch or two, and so few collectives
// in flight that a blocking ncclAllReduce never waits for room in NCCL's queue.
constexpr int kEpochsInFlight = 4;

// The events of a run, made once: its start and stop, and a pacing mark per epoch.
struct RunMarks {
  explicit RunMarks(int epochs) : progress(static_cast<std::size_t>(epochs)) {}
  Event start{EventTiming::kEnabled}, stop{EventTiming::kEnabled};
  std::vector<Event> progress;
};

// One timed run of this rank: the same three steps as DataParallel's, for this rank's GPU alone,
// the host at most kEpochsInFlight epochs ahead of it and never blocked inside CUDA (a dead peer
// must not hang it). Returns the run's milliseconds, between its two events.
double run_once(Replica& replica, Communicator& comm, const Watch& watch, cudaStream_t st, RunMarks& m) {
  const int epochs = static_cast<int>(m.progress.size());
  Event &start = m.start, &stop = m.stop;
  std::vector<Event>& progress = m.progress;
  replica.enqueue_reset();
  start.record(st);
  for (int e = 0; e < epochs; ++e) {
    replica.enqueue_sums();
    comm.call(ncclAllReduce(replica.sums(), replica.sums(), 3, ncclFloat, ncclSum, comm.get(), st), "all-reduce", watch);
    replica.enqueue_step(e);
    progress[e].record(st);
    if (e >= kEpochsInFlight) {
      comm.wait_event(progress[e - kEpochsInFlight].get(), "epoch " + std::to_string(e - kEpochsInFlight), watch);
    }
  }
  stop.record(st);
  comm.wait_event(stop.get(), "the last epochs", watch);
  return static_cast<double>(elapsed_ms(start, stop));
}

}  // namespace

ParallelRun train_ddp_rank(const Problem& problem, const RankSetup& setup, int repeats,
                           const RankSumsBuffers& sums_buffers) {
  NvtxRange range("distributed data parallel");
  const int epochs = problem.config.epochs;
  const Watch& watch = setup.watch;
  CUDA_CHECK(cudaSetDevice(setup.device));
  Stream stream;
  const cudaStream_t st = stream.get();
  require_shard_fits(problem, setup.world_size, setup.rank, "rank " + std::to_string(setup.rank) + "'s");
  Replica replica(problem, train_shard_of(problem, setup.world_size, setup.rank),
                  test_shard_of(problem, setup.world_size, setup.rank), st);
  // This rank's communicator: every rank calls this with the same unique id; it returns when all joined.
  Communicator comm = Communicator::init_rank(setup.id, setup.world_size, setup.rank, watch, setup.nonblocking);
  ParallelRun out;
  out.mode = "ddp";
  const std::unique_ptr<SumsBuffers> elsewhere = sums_buffers ? sums_buffers(comm, st, watch) : nullptr;
  if (elsewhere && elsewhere->buffer(0)) replica.use_sums_buffer(elsewhere->buffer(0));

  RunMarks marks(epochs);
  run_once(replica, comm, watch, st, marks);  // the warm-up, untimed (every run gives the same bits)
  std::vector<double> runs_ms;
  for (int i = 0; i < repeats; ++i) runs_ms.push_back(run_once(replica, comm, watch, st, marks));

  replica.enqueue_test_sums();
  comm.call(ncclAllReduce(replica.test_sums(), replica.test_sums(), 3, ncclFloat, ncclSum, comm.get(), st),
            "test all-reduce", watch);
  Event done;
  done.record(st);
  comm.wait_event(done.get(), "the test all-reduce", watch);
  const RankResult mine = rank_result(setup.rank, setup.device, replica, problem, runs_ms);
  out.ranks = all_gather_results(mine, problem, setup.world_size, repeats, comm, st, watch);
  out.losses = replica.read(epochs).losses;  // every rank's losses are the same bits
  if (elsewhere) {
    out.exchange = elsewhere->exchange();
    out.exchange_note = elsewhere->note();
    elsewhere->close();  // before the communicator's finalize
  }
  comm.finalize(watch);
  return out;
}

}  // namespace workbook::multi_gpu

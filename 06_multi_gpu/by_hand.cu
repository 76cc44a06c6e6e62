// by_hand.cu: chapter 06's second lesson program. multi_gpu.cu trained with NCCL's all-reduce
// between two kernels of every epoch; here the sums meet by hand, inside the epoch's one kernel
// per GPU: each GPU writes its three sums into a slot of every GPU's mailbox over NVLink and adds
// every rank's in rank order (one_shot_exchange.h). No NCCL call in the loop, no host in between.
// With --on-chip, every epoch is one launch per GPU that keeps its shard in registers and shared
// memory, as chapter 05's variant 8 did on one GPU (on_chip.cu).
//
//   by_hand                                     # dp: one process, peer access, every GPU
//   by_hand --on-chip --points 10M              # each GPU's shard kept on its chip for every epoch
//   multi_gpu_bench ddp --nproc 2 --exchange one_shot   # one process per GPU, mailboxes over CUDA IPC
//   mpirun -np 2 by_hand ddp [--on-chip]
// Its files: replica.cu (multi_gpu's), one_shot_exchange.cu, on_chip.cu, and this one.
#include "by_hand.h"

#include "cuda_check.h"
#include "nvtx.h"
#include "stream.h"
#include "support/peer_access.h"

#include <memory>
#include <optional>

namespace workbook::multi_gpu {
namespace {

constexpr int kEpochsInFlight = 4;  // ddp: how far the host may run ahead of its GPU (ddp.cu says why)

// What one device holds: multi_gpu.cu's plan, and the mailbox its peers write into.
struct Plan {
  int device = 0;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<OneShotMailbox> mailbox;  // slot r holds GPU r's sums
  std::unique_ptr<OnChipEpochs> on_chip;    // --on-chip
  std::unique_ptr<Event> start, stop;
  std::vector<double> runs_ms;
};

std::vector<Plan> make_plans(const Problem& problem, const std::vector<int>& devices, double timeout_s, bool on_chip) {
  const int count = static_cast<int>(devices.size());
  for (int d = 0; d < count; ++d) {
    CUDA_CHECK(cudaSetDevice(devices[d]));
    require_shard_fits(problem, count, d, "GPU " + std::to_string(devices[d]) + "'s");
  }
  std::vector<Plan> plans(devices.size());
  for (int d = 0; d < count; ++d) {
    Plan& p = plans[d];
    p.device = devices[d];
    CUDA_CHECK(cudaSetDevice(p.device));
    p.stream = std::make_unique<Stream>();
    p.replica = std::make_unique<Replica>(problem, train_shard_of(problem, count, d), test_shard_of(problem, count, d),
                                          p.stream->get());
    p.mailbox = std::make_unique<OneShotMailbox>(count, d, timeout_s);
    if (on_chip) p.on_chip = std::make_unique<OnChipEpochs>(p.replica->view(), *p.mailbox);  // may not fit
    p.start = std::make_unique<Event>(EventTiming::kEnabled);
    p.stop = std::make_unique<Event>(EventTiming::kEnabled);
  }
  return plans;
}

// One run on every device, queued before the host waits for any: epoch by epoch on every GPU in
// turn (GPU 0's kernel waits for GPU 1's, queued after it), or one launch per GPU on chip.
void run_once(std::vector<Plan>& plans, int epochs) {
  const UnsyncedLaunches waits_for_peers;
  for (Plan& p : plans) {
    CUDA_CHECK(cudaSetDevice(p.device));
    p.replica->enqueue_reset();
    p.start->record(p.stream->get());
    if (p.on_chip) p.on_chip->enqueue();
  }
  for (int e = 0; e < epochs && !plans.front().on_chip; ++e) {
    for (Plan& p : plans) {
      CUDA_CHECK(cudaSetDevice(p.device));
      enqueue_epoch_one_shot(p.replica->view(), *p.mailbox, e);  // sums, every mailbox, all added, the step
    }
  }
  for (Plan& p : plans) {
    CUDA_CHECK(cudaSetDevice(p.device));
    p.stop->record(p.stream->get());
  }
  for (Plan& p : plans) {
    CUDA_CHECK(cudaSetDevice(p.device));
    p.stream->synchronize();
    p.mailbox->throw_if_failed("GPU " + std::to_string(p.device), epochs);
    p.runs_ms.push_back(elapsed_ms(*p.start, *p.stop));
  }
}

}  // namespace

ParallelRun train_by_hand(const Problem& problem, const std::vector<int>& devices, int repeats, double timeout_s,
                          bool on_chip) {
  NvtxRange range("by hand, one process");
  const PeerAccess peer_access(devices);  // every GPU writes into every other's mailbox
  std::vector<Plan> plans = make_plans(problem, devices, timeout_s, on_chip);
  const DrainMailboxesFirst drain_first(plans);  // runs before any plan is freed
  std::vector<MailboxSlot*> mailboxes;
  for (Plan& p : plans) mailboxes.push_back(p.mailbox->local());
  for (Plan& p : plans) p.mailbox->connect(mailboxes);
  run_once(plans, problem.config.epochs);  // the warm-up, untimed (every run gives the same bits)
  for (Plan& p : plans) p.runs_ms.clear();
  for (int i = 0; i < repeats; ++i) run_once(plans, problem.config.epochs);

  ParallelRun out{"dp", on_chip, "one_shot", kOneShotNote + std::string(" (peer access)"), {}, {}};
  {
    const UnsyncedLaunches waits_for_peers;
    for (Plan& p : plans) {  // the test sums meet by hand too
      CUDA_CHECK(cudaSetDevice(p.device));
      p.replica->enqueue_test_sums();
      launch_one_shot_exchange(p.replica->test_sums(), p.replica->test_sums(), *p.mailbox, p.stream->get());
    }
  }
  for (std::size_t d = 0; d < plans.size(); ++d) {
    CUDA_CHECK(cudaSetDevice(plans[d].device));
    plans[d].stream->synchronize();
    plans[d].mailbox->throw_if_failed("GPU " + std::to_string(plans[d].device), 0);
    out.ranks.push_back(rank_result(static_cast<int>(d), plans[d].device, *plans[d].replica, problem, plans[d].runs_ms));
  }
  out.losses = plans.front().replica->read(problem.config.epochs).losses;
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return out;
}

ParallelRun train_by_hand_rank(const Problem& problem, const RankSetup& setup, int repeats, bool on_chip) {
  NvtxRange range("by hand, one rank");
  const int epochs = problem.config.epochs, world = setup.world_size;
  const Watch& watch = setup.watch;
  CUDA_CHECK(cudaSetDevice(setup.device));
  Stream stream;
  const cudaStream_t st = stream.get();
  require_shard_fits(problem, world, setup.rank, "rank " + std::to_string(setup.rank) + "'s");
  Replica replica(problem, train_shard_of(problem, world, setup.rank), test_shard_of(problem, world, setup.rank), st);
  // The mailbox before the communicator, so that it outlives it (an abort of the communicator
  // first stops the mailbox's waits on the GPU); its waits give up a little before the host's, so
  // that the error names the rank that never came.
  OneShotMailbox mailbox(world, setup.rank, 0.9 * watch.timeout_s);
  std::optional<OnChipEpochs> all_epochs;
  if (on_chip) all_epochs.emplace(replica.view(), mailbox);  // OnChipDoesNotFit above the room
  Communicator comm = Communicator::init_rank(setup.id, world, setup.rank, watch, setup.nonblocking);
  comm.watch_exchange([&mailbox] { mailbox.abort(); }, [&mailbox, epochs] { return mailbox.failure(epochs); });
  connect_over_nccl(mailbox, comm, st, watch);  // every rank's mailbox mapped here, over CUDA IPC

  Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
  std::vector<Event> progress(static_cast<std::size_t>(epochs));
  std::vector<double> runs_ms;
  for (int i = 0; i <= repeats; ++i) {  // run 0, the warm-up, untimed
    replica.enqueue_reset();
    start.record(st);
    if (all_epochs) all_epochs->enqueue();
    for (int e = 0; e < epochs && !all_epochs; ++e) {  // the host at most kEpochsInFlight epochs ahead
      enqueue_epoch_one_shot(replica.view(), mailbox, e);
      progress[e].record(st);
      const int behind = e - kEpochsInFlight;
      if (behind >= 0) comm.wait_event(progress[behind].get(), "epoch " + std::to_string(behind), watch);
    }
    stop.record(st);
    comm.wait_event(stop.get(), all_epochs ? "the epochs on chip" : "the last epochs", watch);
    if (i > 0) runs_ms.push_back(elapsed_ms(start, stop));
  }
  replica.enqueue_test_sums();
  launch_one_shot_exchange(replica.test_sums(), replica.test_sums(), mailbox, st);
  Event done;
  done.record(st);
  comm.wait_event(done.get(), "the test sums", watch);
  mailbox.disconnect();  // unmapped before the all-gather, so no rank frees a mapped mailbox
  ParallelRun out{"ddp", on_chip, "one_shot", kOneShotNote + std::string(" (CUDA IPC)"), {}, {}};
  out.ranks = all_gather_results(rank_result(setup.rank, setup.device, replica, problem, runs_ms), problem, world,
                                 repeats, comm, st, watch);
  out.losses = replica.read(epochs).losses;
  comm.finalize(watch);
  return out;
}

}  // namespace workbook::multi_gpu

// The program: train (dp here, or one ddp rank), check, report (support/lesson_main.h). The
// bench and the tests link this file too, its main() renamed (cmake/WorkbookChapter.cmake).
int main(int argc, char** argv) {
  using namespace workbook::multi_gpu;
  return lesson_main(
      argc, argv,
      {"by_hand", "Chapter 06: the same training with the sums exchanged by hand over NVLink, and on the GPUs' chips",
       "multi_gpu_bench ddp --nproc N --exchange one_shot", /*on_chip_flag=*/true,
       [](const Problem& p, const std::vector<int>& devices, const LessonOptions& o) {
         return train_by_hand(p, devices, o.repeats, o.timeout_s, o.on_chip);
       },
       [](const Problem& p, const RankSetup& setup, const LessonOptions& o) {
         return train_by_hand_rank(p, setup, o.repeats, o.on_chip);
       }});
}

// multi_gpu.cu: chapter 06's lesson. Chapter 05 trained the regression on one GPU; here the same
// training runs on every GPU of a machine (or several), data-parallel, the way PyTorch's
// DataParallel and DistributedDataParallel do it. The training set is cut into one shard per GPU;
// each epoch, every GPU computes chapter 05's three sums over its shard, NCCL all-reduces those
// three floats, and every GPU applies the same SGD step: the same bits of w and b everywhere.
// Read it beside "The Role of GPUs in Deep Learning" (DataParallel, DistributedDataParallel) and
// "Understanding the Host and Device Paradigm" (ranks: one process per GPU).
//
//   multi_gpu                           # dp: one process drives every GPU (the DataParallel analog)
//   mpirun -np 2 multi_gpu ddp          # one process per GPU (the DDP analog); or, without MPI,
//   multi_gpu_bench ddp --nproc 2       # the bench's launcher starts the ranks, as torchrun would
//
// The program's files, in the order the README's "Where to look" reads them:
//   replica.cu            what one GPU does: its shard's three sums (and their CPU twin), the step
//   multi_gpu.cu (here)   DataParallel: one process, a plan per GPU, three loops per epoch
//   ddp.cu                DistributedDataParallel: a rank per GPU, its communicator from the launcher
// The second program, by_hand.cu, exchanges the sums by hand and trains on the GPUs' chips.
// support/ starts and guards the ranks, checks the run and prints the report (== 1. to == 6.);
// bench/ measures it all (multi_gpu_bench).
#include "multi_gpu.h"

#include "cuda_check.h"
#include "nccl_check.h"
#include "nvtx.h"
#include "stream.h"

#include <memory>

namespace workbook::multi_gpu {
namespace {

// What one device holds, all made with that device current (cuda-samples' simpleMultiGPU calls
// it a plan): its stream, its replica over its shard, the events around each run.
struct Plan {
  int device = 0;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<Event> start, stop;
  std::vector<double> runs_ms;
};

void make_current(const Plan& p) { CUDA_CHECK(cudaSetDevice(p.device)); }  // launches go to the current device

// One plan per device. Every device's shard is asked for before any is allocated, so a size that
// does not fit is one line.
std::vector<Plan> make_plans(const Problem& problem, const std::vector<int>& devices) {
  const int count = static_cast<int>(devices.size());
  for (int d = 0; d < count; ++d) {
    CUDA_CHECK(cudaSetDevice(devices[d]));
    require_shard_fits(problem, count, d, "GPU " + std::to_string(devices[d]) + "'s");
  }
  std::vector<Plan> plans(devices.size());
  for (int d = 0; d < count; ++d) {
    Plan& p = plans[d];
    p.device = devices[d];
    make_current(p);
    p.stream = std::make_unique<Stream>();
    p.replica = std::make_unique<Replica>(problem, train_shard_of(problem, count, d), test_shard_of(problem, count, d),
                                          p.stream->get());
    p.start = std::make_unique<Event>(EventTiming::kEnabled);
    p.stop = std::make_unique<Event>(EventTiming::kEnabled);
  }
  return plans;
}

// The all-reduce of one buffer of 3 floats per device (the sums or the test sums), as ONE collective.
void all_reduce(std::vector<Plan>& plans, const CommunicatorGroup& comms, float* (Replica::*buffer_of)()) {
  std::vector<float*> buffers;
  std::vector<ncclComm_t> per_device;
  std::vector<cudaStream_t> streams;
  for (std::size_t d = 0; d < plans.size(); ++d) {
    buffers.push_back((plans[d].replica.get()->*buffer_of)());
    per_device.push_back(comms.get(d));
    streams.push_back(plans[d].stream->get());
  }
  all_reduce_sums(buffers, per_device, streams);
}

// One run: every epoch queued on every device in three flat loops (the sums on each GPU, the
// all-reduce, the step on each GPU); the host waits only at the end. Each plan gets the run's
// time, between its two events.
void run_once(std::vector<Plan>& plans, const CommunicatorGroup& comms, int epochs) {
  for (Plan& p : plans) {
    make_current(p);
    p.replica->enqueue_reset();
    p.start->record(p.stream->get());
  }
  for (int e = 0; e < epochs; ++e) {
    for (Plan& p : plans) {
      make_current(p);
      p.replica->enqueue_sums();  // each GPU: its shard's three sums
    }
    all_reduce(plans, comms, &Replica::sums);  // every GPU's sums, added, on every GPU
    for (Plan& p : plans) {
      make_current(p);
      p.replica->enqueue_step(e);  // each GPU: the same step on the same sums
    }
  }
  for (Plan& p : plans) {
    make_current(p);
    p.stop->record(p.stream->get());
  }
  for (Plan& p : plans) {
    make_current(p);
    p.stream->synchronize();
    p.runs_ms.push_back(elapsed_ms(*p.start, *p.stop));
  }
}

}  // namespace

// DataParallel's all-reduce: this one thread issues every device's part between ncclGroupStart
// and ncclGroupEnd, so NCCL launches them as one collective (issued one by one, the first would
// wait for peers that this thread has not reached yet).
void all_reduce_sums(const std::vector<float*>& buffers, const std::vector<ncclComm_t>& comms,
                     const std::vector<cudaStream_t>& streams) {
  NCCL_CHECK(ncclGroupStart());
  for (std::size_t d = 0; d < buffers.size(); ++d) {
    NCCL_CHECK(ncclAllReduce(buffers[d], buffers[d], 3, ncclFloat, ncclSum, comms[d], streams[d]));
  }
  NCCL_CHECK(ncclGroupEnd());
}

ParallelRun train_data_parallel(const Problem& problem, const std::vector<int>& devices, int repeats,
                                const DpSumsBuffers& sums_buffers) {
  NvtxRange range("data parallel");
  std::vector<Plan> plans = make_plans(problem, devices);
  // One communicator per device, all made by this thread in one call (ncclCommInitAll). An
  // exception aborts them (CommunicatorGroup).
  CommunicatorGroup comms = CommunicatorGroup::init_all(devices);
  ParallelRun out;
  out.mode = "dp";
  const std::unique_ptr<SumsBuffers> elsewhere = sums_buffers ? sums_buffers(comms, devices) : nullptr;
  for (std::size_t d = 0; d < plans.size() && elsewhere && elsewhere->buffer(d); ++d) {
    plans[d].replica->use_sums_buffer(elsewhere->buffer(d));
  }

  run_once(plans, comms, problem.config.epochs);  // the warm-up, untimed (every run gives the same bits)
  for (Plan& p : plans) p.runs_ms.clear();
  for (int i = 0; i < repeats; ++i) run_once(plans, comms, problem.config.epochs);

  // The test loss: each device's test shard, all-reduced like the gradient sums.
  for (Plan& p : plans) {
    make_current(p);
    p.replica->enqueue_test_sums();
  }
  all_reduce(plans, comms, &Replica::test_sums);
  for (std::size_t d = 0; d < plans.size(); ++d) {
    make_current(plans[d]);
    plans[d].stream->synchronize();
    out.ranks.push_back(rank_result(static_cast<int>(d), plans[d].device, *plans[d].replica, problem, plans[d].runs_ms));
  }
  out.losses = plans.front().replica->read(problem.config.epochs).losses;
  if (elsewhere) {
    out.exchange = elsewhere->exchange();
    out.exchange_note = elsewhere->note();
    elsewhere->close();  // before the communicators go
  }
  comms.finalize();  // every stream synchronized above: grouped finalize, then destroy
  CUDA_CHECK(cudaSetDevice(devices.front()));
  return out;
}

}  // namespace workbook::multi_gpu

// The program: train (dp here, or one ddp rank), check against the float64 reference and one GPU,
// report (support/lesson_main.h). multi_gpu_bench and the tests link this file too, its main()
// renamed (cmake/WorkbookChapter.cmake).
int main(int argc, char** argv) {
  using namespace workbook::multi_gpu;
  return lesson_main(
      argc, argv,
      {"multi_gpu", "Chapter 06: data-parallel training over NCCL, one process for every GPU (dp) or one per GPU (ddp)",
       "multi_gpu_bench ddp --nproc N", /*on_chip_flag=*/false,
       [](const Problem& p, const std::vector<int>& devices, const LessonOptions& o) {
         return train_data_parallel(p, devices, o.repeats);
       },
       [](const Problem& p, const RankSetup& setup, const LessonOptions& o) { return train_ddp_rank(p, setup, o.repeats); }});
}

// by_hand.h: chapter 06's second lesson program: multi_gpu.h's training over its Replica, the sums
// exchanged by hand (one_shot_exchange.h) inside one kernel per GPU and epoch, or, --on-chip, every
// epoch in one launch per GPU that keeps its shard in registers and shared memory (on_chip.cu).
//
//   ParallelRun dp = train_by_hand(problem, {0, 1}, /*repeats=*/3, /*timeout_s=*/30, /*on_chip=*/false);
//   ParallelRun ddp = train_by_hand_rank(problem, setup, 3, /*on_chip=*/true);   // one process per GPU
#pragma once

#include "on_chip_room.h"
#include "one_shot_exchange.h"
#include "replica.h"
#include "support/lesson_main.h"
#include "support/training_run.h"

#include <stdexcept>
#include <vector>

namespace workbook::multi_gpu {

// One process, peer access between every pair of `devices`, a mailbox per GPU (its waits give up
// after timeout_s); an epoch is one kernel per GPU (or, on_chip, every epoch one launch per GPU).
ParallelRun train_by_hand(const Problem& problem, const std::vector<int>& devices, int repeats, double timeout_s,
                          bool on_chip);

// One rank of one process per GPU: the mailboxes mapped over CUDA IPC (connect_over_nccl); NCCL
// only starts the rank and gathers the results, never in the loop.
ParallelRun train_by_hand_rank(const Problem& problem, const RankSetup& setup, int repeats, bool on_chip);

// One epoch of `replica` in one kernel (one_shot_exchange.cu): the shard's sums, published into
// every peer's mailbox, every rank's sums added in rank order, the step.
void enqueue_epoch_one_shot(const ReplicaView& replica, const OneShotMailbox& box, int epoch);

// Every epoch of `replica` in one cooperative launch that keeps the shard in this GPU's registers
// and shared memory, the sums meeting through `box` inside the kernel (on_chip.cu). Made on the
// replica's device; throws OnChipDoesNotFit when the shard is larger than this GPU's room.
class OnChipEpochs {
 public:
  OnChipEpochs(const ReplicaView& replica, const OneShotMailbox& box);
  void enqueue();

 private:
  ReplicaView replica_;
  const OneShotMailbox& box_;
  fused::OnChipRoom room_;
  DeviceBuffer<float> partials_;  // 2 epochs x (3 sums + a flag) x its blocks
};

// The room of the on-chip kernel on the current GPU (common/on_chip_room.h): how many training
// points each GPU can keep on chip for all epochs, computed from the GPU's properties.
fused::OnChipRoom on_chip_room();

// A shard larger than its GPU's room: "GPU 1's shard does not fit on chip: 38.4 MB needed, 48.0
// MB available". The bench skips such a size; the program stops with the line.
class OnChipDoesNotFit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace workbook::multi_gpu

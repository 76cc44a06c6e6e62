// lesson_main.h: what chapter 06's two lesson programs (multi_gpu, by_hand) share around their
// training: the flags, how a ddp rank starts (the bench's launcher or mpirun), the checks and the
// report. Each program brings its two ways to train, one process for every GPU (dp) and one
// rank of one process per GPU (ddp):
//
//   int main(int argc, char** argv) {
//     return lesson_main(argc, argv, {"multi_gpu", "Chapter 06: ...", "multi_gpu_bench ddp --nproc N",
//                                     /*on_chip_flag=*/false, train_dp, train_rank});
//   }
//
// The report, in steps == 1. to == 6.: one row per rank; every rank bit-identical; against the
// float64 reference (on a host thread while the GPUs train); against one GPU; the losses; the
// time per epoch of the slowest rank.
#pragma once

#include "common_options.h"
#include "regression_problem.h"
#include "replica.h"
#include "support/nccl_comm.h"
#include "support/training_run.h"

#include <nccl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

struct LessonOptions {
  CommonOptions common;
  regression::Config config;
  bool ddp = false;  // the ddp subcommand: one rank of a DDP run; else dp
  int gpus = 0;      // dp: GPUs from --device on (0: all)
  int repeats = 5;
  std::int64_t reference_max = 20'000'000;
  double timeout_s = 30.0;
  bool nonblocking = false;  // ddp: ncclConfig_t::blocking = 0
  bool on_chip = false;      // by_hand --on-chip
};

// What a ddp rank is told when it starts: who it is, its GPU, the id of the NCCL communicator all
// ranks join, and how long a wait without progress may last (and who hears of it: watch.control).
struct RankSetup {
  int rank = 0;
  int world_size = 1;
  int device = 0;
  ncclUniqueId id{};
  Watch watch;
  bool nonblocking = false;  // ncclConfig_t::blocking = 0 (see Communicator::init_rank)
};

struct LessonProgram {
  const char* name;         // "multi_gpu"
  const char* description;  // --help's first line
  const char* bench_start;  // how multi_gpu_bench starts its ranks: "multi_gpu_bench ddp --nproc N"
  bool on_chip_flag;        // takes --on-chip
  std::function<ParallelRun(const Problem&, const std::vector<int>& devices, const LessonOptions&)> train_dp;
  std::function<ParallelRun(const Problem&, const RankSetup&, const LessonOptions&)> train_rank;
};

// The program: the flags (usage errors exit 2 before any CUDA call), the training, the checks and
// the report; the exit code (77 without a GPU).
int lesson_main(int argc, char** argv, const LessonProgram& program);

}  // namespace workbook::multi_gpu

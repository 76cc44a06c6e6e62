// training_ways.h: the ways of --exchange in training, each a plug-in of the bench: how one
// process trains with it (dp), and which program a launched rank runs (ddp).
//
//   nccl            the first lesson program: multi_gpu.cu's DataParallel, `multi_gpu ddp` per rank
//   nccl_symmetric  the same, the sums in NCCL symmetric windows (symmetric_windows.h), through the
//                   lesson's SumsBuffers hook; its ranks are `multi_gpu_bench train-rank ddp`
//   one_shot        the second lesson program: by_hand.cu, `by_hand ddp` per rank (--on-chip too)
#pragma once

#include "support/training_run.h"

#include <functional>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

struct TrainingWay {
  const char* exchange;
  std::function<ParallelRun(const Problem&, const std::vector<int>& devices, int repeats, double timeout_s)> train_dp;
  const char* rank_program;               // beside this bench
  std::vector<std::string> rank_command;  // a rank's first arguments
};

// The way of that name (std::logic_error for any other: the options checked it).
const TrainingWay& training_way(const std::string& exchange);

// `multi_gpu_bench train-rank ...`: the lesson's program with the sums in symmetric windows, for
// the ranks of nccl_symmetric (argv[0] is "train-rank").
int symmetric_lesson_main(int argc, char** argv);

}  // namespace workbook::multi_gpu

// training_ways.cpp: the training plug-ins of the bench (training_ways.h).
#include "bench/training_ways.h"

#include "bench/symmetric_windows.h"
#include "by_hand.h"
#include "multi_gpu.h"

#include <memory>
#include <stdexcept>

namespace workbook::multi_gpu {
namespace {

// The lesson's SumsBuffers hook on symmetric windows: where NCCL declines, no buffer (the
// replica's own) and the run says it ran nccl, and why.
class SymmetricSums : public SumsBuffers {
 public:
  explicit SymmetricSums(SymmetricWindows windows) : windows_(std::move(windows)) {}
  float* buffer(std::size_t gpu) const override { return windows_.active() ? windows_.buffer(gpu) : nullptr; }
  void close() override { windows_.close(); }
  std::string exchange() const override { return windows_.active() ? "nccl_symmetric" : "nccl"; }
  std::string note() const override { return windows_.note(); }

 private:
  SymmetricWindows windows_;
};

std::unique_ptr<SumsBuffers> symmetric_group(CommunicatorGroup& comms, const std::vector<int>& devices) {
  return std::make_unique<SymmetricSums>(SymmetricWindows::register_group(comms, devices));
}

std::unique_ptr<SumsBuffers> symmetric_rank(Communicator& comm, cudaStream_t stream, const Watch& watch) {
  return std::make_unique<SymmetricSums>(SymmetricWindows::register_rank(comm, stream, watch));
}

const TrainingWay kWays[] = {
    {"nccl", [](const Problem& p, const std::vector<int>& d, int repeats, double) { return train_data_parallel(p, d, repeats); },
     "multi_gpu", {"ddp"}},
    {"nccl_symmetric",
     [](const Problem& p, const std::vector<int>& d, int repeats, double) {
       return train_data_parallel(p, d, repeats, symmetric_group);
     },
     "multi_gpu_bench", {"train-rank", "ddp"}},
    {"one_shot",
     [](const Problem& p, const std::vector<int>& d, int repeats, double timeout_s) {
       return train_by_hand(p, d, repeats, timeout_s, /*on_chip=*/false);
     },
     "by_hand", {"ddp"}},
};

}  // namespace

const TrainingWay& training_way(const std::string& exchange) {
  for (const TrainingWay& way : kWays) {
    if (exchange == way.exchange) return way;
  }
  throw std::logic_error("no training way named '" + exchange + "'");
}

int symmetric_lesson_main(int argc, char** argv) {
  return lesson_main(
      argc, argv,
      {"multi_gpu_bench train-rank", "One rank of multi_gpu_bench's --exchange nccl_symmetric (not for a reader)",
       "multi_gpu_bench ddp --nproc N --exchange nccl_symmetric", /*on_chip_flag=*/false,
       [](const Problem& p, const std::vector<int>& devices, const LessonOptions& o) {
         return train_data_parallel(p, devices, o.repeats, symmetric_group);
       },
       [](const Problem& p, const RankSetup& setup, const LessonOptions& o) {
         return train_ddp_rank(p, setup, o.repeats, symmetric_rank);
       }});
}

}  // namespace workbook::multi_gpu

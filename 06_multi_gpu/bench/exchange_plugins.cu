// exchange_plugins.cu: the four plug-ins of the exchange alone (exchange_alone.h), each what one
// way of summing 3 floats over the GPUs of one process needs: connect, enqueue, report.
#include "exchange_alone.h"

#include "cuda_check.h"
#include "nccl_check.h"
#include "one_shot_exchange.cuh"
#include "support/peer_access.h"
#include "symmetric_windows.h"

#include <nccl.h>

#include <stdexcept>

namespace workbook::multi_gpu {

void ExchangePlugin::enqueue(std::vector<ExchangeLane>& lanes) {
  for (ExchangeLane& lane : lanes) {
    CUDA_CHECK(cudaSetDevice(lane.device));
    enqueue_lane(lane);
  }
}

void ExchangePlugin::enqueue_lane(ExchangeLane&) {
  throw std::logic_error("this exchange is one call over every GPU: it cannot be queued per GPU");
}

void ExchangePlugin::enqueue_in_one_kernel(ExchangeLane&, int) {
  throw std::logic_error("this exchange cannot run a batch inside one kernel");
}

namespace {

// ---- nccl, nccl_symmetric: one grouped ncclAllReduce, in place -------------------------------------
class NcclExchange : public ExchangePlugin {
 public:
  explicit NcclExchange(bool symmetric) : symmetric_(symmetric) {}
  void connect(std::vector<ExchangeLane>& lanes) override {
    std::vector<int> devices;
    for (const ExchangeLane& lane : lanes) devices.push_back(lane.device);
    comms_ = CommunicatorGroup::init_all(devices);
    if (!symmetric_) return;
    windows_ = SymmetricWindows::register_group(comms_, devices);
    for (std::size_t r = 0; r < lanes.size() && windows_.active(); ++r) lanes[r].sums = windows_.buffer(r);
  }
  void enqueue(std::vector<ExchangeLane>& lanes) override {  // NCCL sets each device itself
    NCCL_CHECK(ncclGroupStart());
    for (std::size_t r = 0; r < lanes.size(); ++r) {
      NCCL_CHECK(ncclAllReduce(lanes[r].sums, lanes[r].sums, 3, ncclFloat, ncclSum, comms_.get(r),
                               lanes[r].stream->get()));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  void close() override {
    windows_.close();
    comms_.finalize();
  }
  std::string used() const override {
    return exchange_name(symmetric_ && windows_.active() ? ExchangeKind::kNcclSymmetric : ExchangeKind::kNccl);
  }
  std::string note() const override { return windows_.note(); }

 private:
  bool symmetric_;
  CommunicatorGroup comms_;  // before the windows: an unclosed window aborts it first (symmetric_windows.h)
  SymmetricWindows windows_;
};

// ---- one_shot: the lesson's exchange, one warp per GPU ------------------------------------------
__global__ void one_shot_loop_kernel(float* sums, OneShotView v, int iterations) {
  const float mine[3] = {sums[0], sums[1], sums[2]};
  const unsigned first = one_shot_next(v);
  float t[3] = {0.0f, 0.0f, 0.0f};
  for (int i = 0; i < iterations; ++i) {
    const unsigned s = first == 0 ? 0u : first + static_cast<unsigned>(i);
    one_shot_publish(v, s, mine);
    if (!one_shot_gather(v, s, mine, t)) return;
  }
  if (threadIdx.x != 0) return;
  one_shot_done(v, first + static_cast<unsigned>(iterations) - 1);
  sums[0] = t[0];
  sums[1] = t[1];
  sums[2] = t[2];
}

class OneShotExchange : public ExchangePlugin {
 public:
  explicit OneShotExchange(double timeout_s) : timeout_s_(timeout_s) {}
  // A mailbox's destructor drains only its own GPU, and a peer still publishing could then write
  // into freed slots: every mailbox is aborted, then every GPU drained, before any goes.
  ~OneShotExchange() override {
    for (auto& box : mailboxes_) box->abort();
    for (auto& box : mailboxes_) box->drain();
  }
  void connect(std::vector<ExchangeLane>& lanes) override {
    std::vector<int> devices;
    for (const ExchangeLane& lane : lanes) devices.push_back(lane.device);
    peer_access_ = PeerAccess(devices);
    const int n = static_cast<int>(lanes.size());
    std::vector<MailboxSlot*> slots;
    for (const ExchangeLane& lane : lanes) {
      CUDA_CHECK(cudaSetDevice(lane.device));
      mailboxes_.push_back(std::make_unique<OneShotMailbox>(n, lane.rank, timeout_s_));
      slots.push_back(mailboxes_.back()->local());
    }
    for (auto& box : mailboxes_) box->connect(slots);
  }
  bool per_lane() const override { return true; }
  void enqueue_lane(ExchangeLane& lane) override {
    launch_one_shot_exchange(lane.sums, lane.sums, box(lane), lane.stream->get());
  }
  bool in_one_kernel() const override { return true; }
  void enqueue_in_one_kernel(ExchangeLane& lane, int iterations) override {
    one_shot_loop_kernel<<<1, 32, 0, lane.stream->get()>>>(lane.sums, box(lane).view(), iterations);
    CUDA_CHECK_LAUNCH();
  }
  void throw_if_failed(const std::string& when) const override {
    for (const auto& b : mailboxes_) b->throw_if_failed(when, 0);
  }
  std::string used() const override { return exchange_name(ExchangeKind::kOneShot); }

 private:
  const OneShotMailbox& box(const ExchangeLane& lane) const { return *mailboxes_.at(static_cast<std::size_t>(lane.rank)); }
  double timeout_s_;
  PeerAccess peer_access_;  // first: disabled after every mailbox is gone
  std::vector<std::unique_ptr<OneShotMailbox>> mailboxes_;
};

// ---- none: an empty one-warp kernel, the floor under every launched exchange ---------------------
__global__ void empty_kernel() {}

class NoExchange : public ExchangePlugin {
 public:
  void connect(std::vector<ExchangeLane>&) override {}
  bool per_lane() const override { return true; }
  void enqueue_lane(ExchangeLane& lane) override {
    empty_kernel<<<1, 32, 0, lane.stream->get()>>>();
    CUDA_CHECK_LAUNCH();
  }
  bool sums_over_gpus() const override { return false; }
  std::string used() const override { return "empty kernel"; }
  std::string launch_name(ExchangeForm) const override { return "empty_kernel"; }
};

// ---- the one-shot exchange in two halves (exchange_alone.h) ---------------------------------------
__global__ void one_shot_publish_kernel(const float* sums, OneShotView v) {
  const float mine[3] = {sums[0], sums[1], sums[2]};
  one_shot_publish(v, one_shot_next(v), mine);
}

__global__ void one_shot_gather_kernel(const float* sums, float* total, OneShotView v) {
  const float mine[3] = {sums[0], sums[1], sums[2]};
  const unsigned s = one_shot_next(v);
  one_shot_gather_into(v, s, mine, total);
}

}  // namespace

void launch_one_shot_publish(const float* sums, const OneShotMailbox& box, cudaStream_t stream) {
  one_shot_publish_kernel<<<1, 32, 0, stream>>>(sums, box.view());
  CUDA_CHECK_LAUNCH();
}

void launch_one_shot_gather(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream) {
  one_shot_gather_kernel<<<1, 32, 0, stream>>>(sums, total, box.view());
  CUDA_CHECK_LAUNCH();
}

std::unique_ptr<ExchangePlugin> make_exchange_plugin(const std::string& name, double timeout_s) {
  if (name == exchange_name(ExchangeKind::kNccl)) return std::make_unique<NcclExchange>(false);
  if (name == exchange_name(ExchangeKind::kNcclSymmetric)) return std::make_unique<NcclExchange>(true);
  if (name == exchange_name(ExchangeKind::kOneShot)) return std::make_unique<OneShotExchange>(timeout_s);
  if (name == "none") return std::make_unique<NoExchange>();
  throw std::logic_error("no exchange plug-in named '" + name + "'");
}

}  // namespace workbook::multi_gpu

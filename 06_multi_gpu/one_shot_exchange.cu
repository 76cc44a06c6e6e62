// one_shot_exchange.cu: the mailbox's memory, its connection to the peers (peer access in one
// process, CUDA IPC handles across processes), the exchange alone, and the epoch with the exchange
// inside, in one kernel.
#include "one_shot_exchange.cuh"

#include "by_hand.h"
#include "replica.cuh"

#include "cuda_check.h"
#include "nccl_check.h"
#include "stream.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace workbook::multi_gpu {
namespace {

// The exchange alone, one warp (one_shot_exchange.cuh): the sums are read by every lane. It is launched as a programmatic dependent launch (Hopper's PDL): the next
// kernel of the stream may be scheduled as soon as this one starts, and waits at
// griddepcontrol.wait until this one has ended and its writes are visible. Back to back, a
// launch then costs the wait, not the whole trip through the launch path.
__global__ void one_shot_exchange_kernel(const float* sums, float* total, OneShotView v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");              // the kernel before: ended, written
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // the next may be scheduled now
#endif
  const float mine[3] = {sums[0], sums[1], sums[2]};
  const unsigned s = one_shot_next(v);
  one_shot_publish(v, s, mine);
  one_shot_gather_into(v, s, mine, total);
}

// The whole epoch in one kernel: chapter 05's fused pass over the shard (replica.cuh); the last
// block's first warp, once it has the shard's sums, publishes them into every peer's mailbox,
// waits for every peer's, adds all ranks' in rank order and steps; a wait that gave up skips the
// step.
__global__ void __launch_bounds__(fused::kThreads)
    one_shot_epoch_kernel(ReplicaView r, int epoch, OneShotView mailbox) {
  fused::Sums total;
  if (!shard_sums(r.x, r.y, r.n, r.params, r.partials, r.done_count, total) || threadIdx.x >= 32) return;
  const float mine[3] = {__shfl_sync(kFullWarp, total.rr, 0), __shfl_sync(kFullWarp, total.rx, 0),
                         __shfl_sync(kFullWarp, total.r, 0)};
  const unsigned s = one_shot_next(mailbox);
  one_shot_publish(mailbox, s, mine);
  float all[3];
  if (!one_shot_gather(mailbox, s, mine, all) || threadIdx.x != 0) return;
  one_shot_done(mailbox, s);
  sgd_step(all, r.params, r.losses, epoch, r.lr, r.inv_n, r.two_inv_n);
}

std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

}  // namespace

void OneShotMailbox::FreePinned::operator()(ExchangeSignals* p) const noexcept { (void)cudaFreeHost(p); }

OneShotMailbox::OneShotMailbox(int world, int rank, double timeout_s) : timeout_s_(timeout_s) {
  if (world < 1 || world > kMaxOneShotRanks) {
    throw std::runtime_error("--exchange one_shot connects 1 to " + std::to_string(kMaxOneShotRanks) +
                             " GPUs of one node, not " + std::to_string(world));
  }
  CUDA_CHECK(cudaGetDevice(&device_));
  slots_ = DeviceBuffer<MailboxSlot>(2 * static_cast<std::size_t>(world));
  counters_ = DeviceBuffer<unsigned>(2);
  CUDA_CHECK(cudaMemset(slots_.data(), 0, slots_.bytes()));  // exchange number 0: none yet
  CUDA_CHECK(cudaMemset(counters_.data(), 0, counters_.bytes()));
  CUDA_CHECK(cudaDeviceSynchronize());  // the zeros are in place before any (non-blocking) stream reads them
  // Pinned, mapped into every device's address space: the host writes `abort`, the GPU `code`.
  void* host = nullptr;
  CUDA_CHECK(cudaHostAlloc(&host, sizeof(ExchangeSignals), cudaHostAllocMapped | cudaHostAllocPortable));
  signals_.reset(new (host) ExchangeSignals{});
  void* mapped = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
  CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before any peer can learn where it is
  view_.mine = slots_.data();
  view_.mailboxes[rank] = slots_.data();
  view_.counters = counters_.data();  // cudaMalloc: 256-byte aligned, so both load as one 8-byte word
  view_.signals = static_cast<ExchangeSignals*>(mapped);
  view_.world = world;
  view_.rank = rank;
  view_.timeout_ns = static_cast<unsigned long long>(std::clamp(timeout_s, 0.0, 1e6) * 1e9);
  connected_ = world == 1;
}

OneShotMailbox::~OneShotMailbox() {
  abort();  // a kernel still waiting for a peer returns within microseconds
  drain();  // nothing of this device still reads the mailbox or the signals
  close_mappings();
}

void OneShotMailbox::drain() noexcept {
  int previous = 0;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess;
  (void)cudaDeviceSynchronize();
  if (switched) (void)cudaSetDevice(previous);
}

void OneShotMailbox::connect(const std::vector<MailboxSlot*>& mailboxes) {
  if (static_cast<int>(mailboxes.size()) != view_.world || mailboxes[view_.rank] != view_.mine) {
    throw std::logic_error("OneShotMailbox::connect: one mailbox per rank, this rank's own at its index");
  }
  std::copy(mailboxes.begin(), mailboxes.end(), view_.mailboxes);
  connected_ = true;
}

cudaIpcMemHandle_t OneShotMailbox::ipc_handle() const {
  cudaIpcMemHandle_t handle;
  CUDA_CHECK(cudaIpcGetMemHandle(&handle, view_.mine));  // the base of a cudaMalloc allocation
  return handle;
}

void OneShotMailbox::connect_ipc(const std::vector<cudaIpcMemHandle_t>& handles) {
  if (static_cast<int>(handles.size()) != view_.world) throw std::logic_error("connect_ipc: one handle per rank");
  CUDA_CHECK(cudaSetDevice(device_));
  for (int r = 0; r < view_.world; ++r) {
    if (r == view_.rank) continue;
    void* peer = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&peer, handles[r], cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw std::runtime_error("rank " + std::to_string(view_.rank) + ": cannot map rank " + std::to_string(r) +
                               "'s mailbox (cudaIpcOpenMemHandle: " + error_text(e) +
                               "): --exchange one_shot needs every rank on one node, with peer access between their GPUs");
    }
    opened_.push_back(peer);
    view_.mailboxes[r] = static_cast<MailboxSlot*>(peer);
  }
  connected_ = true;
}

void OneShotMailbox::disconnect() {
  std::vector<void*> opened = std::exchange(opened_, {});
  for (void* p : opened) CUDA_CHECK(cudaIpcCloseMemHandle(p));
  for (int r = 0; r < view_.world; ++r) {
    if (r != view_.rank) view_.mailboxes[r] = nullptr;
  }
  connected_ = view_.world == 1;
}

void OneShotMailbox::close_mappings() noexcept {
  for (void* p : std::exchange(opened_, {})) (void)cudaIpcCloseMemHandle(p);
}

const OneShotView& OneShotMailbox::view() const {
  if (!connected_) throw std::logic_error("OneShotMailbox used before connect()");
  return view_;
}

std::optional<std::string> OneShotMailbox::failure(int epochs_per_run) const {
  return exchange_failure(*signals_, epochs_per_run, timeout_s_);
}

void OneShotMailbox::throw_if_failed(const std::string& who, int epochs_per_run) const {
  if (auto line = failure(epochs_per_run)) throw std::runtime_error(who + ": " + *line);
}

void OneShotMailbox::abort() noexcept {
  if (signals_) static_cast<volatile ExchangeSignals*>(signals_.get())->abort = 1;
}

void connect_over_nccl(OneShotMailbox& box, Communicator& comm, cudaStream_t stream, const Watch& watch) {
  const std::size_t bytes = sizeof(cudaIpcMemHandle_t);  // 64
  const std::size_t world = static_cast<std::size_t>(box.world());
  PinnedBuffer<char> host(bytes * world);
  const cudaIpcMemHandle_t mine = box.ipc_handle();
  std::memcpy(host.data() + bytes * static_cast<std::size_t>(box.rank()), &mine, bytes);
  DeviceBuffer<char> all(bytes * world);
  CUDA_CHECK(cudaMemcpyAsync(all.data(), host.data(), all.bytes(), cudaMemcpyHostToDevice, stream));
  char* send = all.data() + bytes * static_cast<std::size_t>(box.rank());  // in place
  comm.call(ncclAllGather(send, all.data(), bytes, ncclUint8, comm.get(), stream), "mailbox handle all-gather", watch);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), all.data(), all.bytes(), cudaMemcpyDeviceToHost, stream));
  Event done;
  done.record(stream);
  comm.wait_event(done.get(), "the mailbox handle all-gather", watch);
  std::vector<cudaIpcMemHandle_t> handles(world);
  for (std::size_t r = 0; r < world; ++r) std::memcpy(&handles[r], host.data() + bytes * r, bytes);
  box.connect_ipc(handles);
}

void enqueue_epoch_one_shot(const ReplicaView& replica, const OneShotMailbox& box, int epoch) {
  one_shot_epoch_kernel<<<replica.blocks, fused::kThreads, 0, replica.stream>>>(replica, epoch, box.view());
  CUDA_CHECK_LAUNCH();
}

void launch_one_shot_exchange(const float* sums, float* total, const OneShotMailbox& box, cudaStream_t stream) {
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;  // ignored before compute capability 9.0
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  config.stream = stream;
  config.attrs = &early;
  config.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&config, one_shot_exchange_kernel, sums, total, box.view()));
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::multi_gpu

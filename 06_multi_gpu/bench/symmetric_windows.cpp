// symmetric_windows.cpp: ncclMemAlloc and ncclCommWindowRegister, the agreement between ranks,
// and the way back (see the header).
#include "symmetric_windows.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "nccl_check.h"
#include "stream.h"

#include <sstream>
#include <stdexcept>
#include <utility>

namespace workbook::multi_gpu {
namespace {

constexpr int kWindowsSince = NCCL_VERSION(2, 27, 0);

std::string version_text(int code) {  // 22803 -> "2.28.3" (the NCCL_VERSION_CODE form of 2.9 and later)
  std::ostringstream s;
  s << code / 10000 << "." << code / 100 % 100 << "." << code % 100;
  return s.str();
}

std::string declined(const std::string& why) {
  return "nccl_symmetric: " + why + "; the all-reduce stays on the stock buffer";
}

[[maybe_unused]] std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  return text;
}

// Empty when the library this process runs with has windows; else why not.
[[maybe_unused]] std::string library_lacks_windows() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "ncclGetVersion failed";
  return v < kWindowsSince ? "the NCCL library is " + version_text(v) + ", and symmetric windows need 2.27" : "";
}

[[maybe_unused]] constexpr const char* kNoWindow =
    "NCCL registered no window (this communicator has no symmetric-memory support; NCCL_DEBUG=INFO says why)";

}  // namespace

SymmetricWindows SymmetricWindows::register_group(CommunicatorGroup& comms, const std::vector<int>& devices) {
  SymmetricWindows w;
  w.abort_communicators_ = [&comms] { comms.abort(); };
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 27, 0)
  (void)devices;
  w.note_ = declined("built with NCCL " + version_text(NCCL_VERSION_CODE) + " headers, which have no symmetric windows (2.27)");
#else
  if (const std::string why = library_lacks_windows(); !why.empty()) {
    w.note_ = declined(why);
    return w;
  }
  int previous = 0;
  CUDA_CHECK(cudaGetDevice(&previous));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    CUDA_CHECK(cudaSetDevice(devices[i]));
    Window x;
    x.device = devices[i];
    x.comm = comms.get(i);
    const ncclResult_t r = ncclMemAlloc(&x.buffer, kBytes);
    if (r != ncclSuccess) {
      w.note_ = declined("ncclMemAlloc failed on GPU " + std::to_string(x.device) + ": " + nccl_text(r, nullptr));
      w.release(false);
      CUDA_CHECK(cudaSetDevice(previous));
      return w;
    }
    w.windows_.push_back(x);
    CUDA_CHECK(cudaMemset(x.buffer, 0, kBytes));
    CUDA_CHECK(cudaDeviceSynchronize());  // the replica's non-blocking stream does not wait for this memset
  }
  CUDA_CHECK(cudaSetDevice(previous));
  // A collective call, and this one thread stands for every rank: all of them in one group
  // (NCCL fills the handles at ncclGroupEnd).
  ncclResult_t result = ncclGroupStart();
  if (result == ncclSuccess) {
    for (Window& x : w.windows_) {
      const ncclResult_t r = ncclCommWindowRegister(x.comm, x.buffer, kBytes, &x.window, NCCL_WIN_COLL_SYMMETRIC);
      if (result == ncclSuccess) result = r;
    }
    const ncclResult_t end = ncclGroupEnd();
    if (result == ncclSuccess) result = end;
  }
  std::string why = result == ncclSuccess ? "" : "ncclCommWindowRegister failed: " + nccl_text(result, nullptr);
  for (const Window& x : w.windows_) {
    if (why.empty() && x.window == nullptr) why = kNoWindow;
  }
  w.settle(why);
#endif
  return w;
}

SymmetricWindows SymmetricWindows::register_rank(Communicator& comm, cudaStream_t stream, const Watch& watch) {
  SymmetricWindows w;
  w.abort_communicators_ = [&comm] { comm.abort(); };
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 27, 0)
  (void)stream;
  (void)watch;
  w.note_ = declined("built with NCCL " + version_text(NCCL_VERSION_CODE) + " headers, which have no symmetric windows (2.27)");
#else
  // Every rank takes the same path: the smallest "so far so good" over the ranks decides each step.
  // Registration is collective, so a rank registers only once every rank has its buffer; every
  // rank reaches both all-reduces, whatever happened to it, so none waits for a missing peer.
  auto every_rank = [&](bool mine, const char* what) {
    PinnedBuffer<int> host(1);
    host.data()[0] = mine ? 1 : 0;
    DeviceBuffer<int> flag(1);
    CUDA_CHECK(cudaMemcpyAsync(flag.data(), host.data(), sizeof(int), cudaMemcpyHostToDevice, stream));
    comm.call(ncclAllReduce(flag.data(), flag.data(), 1, ncclInt32, ncclMin, comm.get(), stream), what, watch);
    CUDA_CHECK(cudaMemcpyAsync(host.data(), flag.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
    Event done;
    done.record(stream);
    comm.wait_event(done.get(), what, watch);
    return host.data()[0] == 1;
  };
  std::string why = library_lacks_windows();
  Window x;
  CUDA_CHECK(cudaGetDevice(&x.device));
  x.comm = comm.get();
  if (why.empty()) {
    const ncclResult_t r = ncclMemAlloc(&x.buffer, kBytes);
    if (r == ncclSuccess) {
      w.windows_.push_back(x);
      CUDA_CHECK(cudaMemsetAsync(x.buffer, 0, kBytes, stream));  // on the stream that will use it
    } else {
      why = "ncclMemAlloc failed: " + nccl_text(r, nullptr);
    }
  }
  if (!every_rank(why.empty(), "symmetric buffer agreement") && why.empty()) why = "another rank got no buffer";
  if (why.empty()) {
    Window& y = w.windows_.back();
    const ncclResult_t r = ncclCommWindowRegister(comm.get(), y.buffer, kBytes, &y.window, NCCL_WIN_COLL_SYMMETRIC);
    if (r == ncclInProgress) {
      comm.call(r, "symmetric window registration", watch);  // non-blocking communicator: wait for it
    } else if (r != ncclSuccess) {
      why = "ncclCommWindowRegister failed: " + nccl_text(r, comm.get());
    }
    if (why.empty() && y.window == nullptr) why = kNoWindow;
  }
  if (!every_rank(why.empty(), "symmetric window agreement") && why.empty()) why = "another rank got no window";
  w.settle(why);
#endif
  return w;
}

void SymmetricWindows::settle(const std::string& why) {
  if (why.empty() && !windows_.empty()) {
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) v = NCCL_VERSION_CODE;  // the headers' then, for the note only
    active_ = true;
    note_ = "nccl_symmetric: the all-reduce runs on a " + std::to_string(kBytes) +
            "-byte ncclMemAlloc buffer per rank, registered with ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) (NCCL " +
            version_text(v) + ")";
    return;
  }
  note_ = declined(why.empty() ? "no buffer" : why);
  release(true);
}

SymmetricWindows::~SymmetricWindows() {
  if (windows_.empty()) return;
  if (abort_communicators_) abort_communicators_();  // their registrations go with them
  release(false);
}

SymmetricWindows::SymmetricWindows(SymmetricWindows&& other) noexcept
    : windows_(std::exchange(other.windows_, {})),
      abort_communicators_(std::move(other.abort_communicators_)),
      note_(std::move(other.note_)),
      active_(std::exchange(other.active_, false)) {}

SymmetricWindows& SymmetricWindows::operator=(SymmetricWindows&& other) noexcept {
  if (this != &other) {
    if (!windows_.empty()) {
      if (abort_communicators_) abort_communicators_();
      release(false);
    }
    windows_ = std::exchange(other.windows_, {});
    abort_communicators_ = std::move(other.abort_communicators_);
    note_ = std::move(other.note_);
    active_ = std::exchange(other.active_, false);
  }
  return *this;
}

float* SymmetricWindows::buffer(std::size_t i) const {
  if (!active_) throw std::logic_error("SymmetricWindows::buffer: no window is active");
  return static_cast<float*>(windows_.at(i).buffer);
}

void SymmetricWindows::close() {
  ncclResult_t first = ncclSuccess;
  int previous = 0;
  CUDA_CHECK(cudaGetDevice(&previous));
  active_ = false;
  // Deregistration is local in NCCL 2.28 (the registration was the collective step), so one
  // thread may undo every rank's window in turn.
  for (Window& x : std::exchange(windows_, {})) {
    CUDA_CHECK(cudaSetDevice(x.device));
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)  // (older headers never fill windows_)
    if (x.window != nullptr) {
      const ncclResult_t r = ncclCommWindowDeregister(x.comm, x.window);
      if (first == ncclSuccess) first = r;
    }
    const ncclResult_t r = ncclMemFree(x.buffer);
    if (first == ncclSuccess) first = r;
#endif
  }
  CUDA_CHECK(cudaSetDevice(previous));
  NCCL_CHECK(first);
}

void SymmetricWindows::release(bool deregister) noexcept {
  int previous = 0;
  const bool known = cudaGetDevice(&previous) == cudaSuccess;
  for (Window& x : std::exchange(windows_, {})) {
    (void)cudaSetDevice(x.device);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    if (deregister && x.window != nullptr) (void)ncclCommWindowDeregister(x.comm, x.window);
    if (x.buffer != nullptr) (void)ncclMemFree(x.buffer);
#else
    (void)deregister;
#endif
  }
  active_ = false;
  if (known) (void)cudaSetDevice(previous);
}

}  // namespace workbook::multi_gpu

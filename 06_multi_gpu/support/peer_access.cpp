// peer_access.cpp: PeerAccess (peer_access.h).
#include "support/peer_access.h"

#include "cuda_check.h"

#include <stdexcept>
#include <string>

namespace workbook::multi_gpu {

PeerAccess::PeerAccess(const std::vector<int>& devices) {
  int previous = 0;
  CUDA_CHECK(cudaGetDevice(&previous));
  try {
    for (int from : devices) {
      for (int to : devices) {
        if (from == to) continue;
        int can = 0;
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
        if (can == 0) {
          throw std::runtime_error("--exchange one_shot needs peer access from GPU " + std::to_string(from) + " to GPU " +
                                   std::to_string(to) + ", and cudaDeviceCanAccessPeer says no");
        }
        CUDA_CHECK(cudaSetDevice(from));
        const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          (void)cudaGetLastError();  // on already (not ours to turn off)
          continue;
        }
        CUDA_CHECK(e);
        enabled_.emplace_back(from, to);
      }
    }
  } catch (...) {
    disable();
    (void)cudaSetDevice(previous);
    throw;
  }
  CUDA_CHECK(cudaSetDevice(previous));
}

PeerAccess::~PeerAccess() { disable(); }

PeerAccess& PeerAccess::operator=(PeerAccess&& other) noexcept {
  if (this != &other) {
    disable();
    enabled_ = std::exchange(other.enabled_, {});
  }
  return *this;
}

void PeerAccess::disable() noexcept {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  for (const auto& [from, to] : std::exchange(enabled_, {})) {
    if (cudaSetDevice(from) == cudaSuccess) (void)cudaDeviceDisablePeerAccess(to);
  }
  (void)cudaSetDevice(previous);
}

}  // namespace workbook::multi_gpu

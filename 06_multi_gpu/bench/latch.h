// latch.h: a kernel that holds a stream until the host lets it go, so that the work queued behind
// it runs back to back on the GPU however slowly the host issued it: what a latency measurement
// needs when queuing one call costs the host as long as the call itself (measure.cu, the
// exchange alone).
//
//   LatchRelease release;
//   ++release.issued;
//   { const RaiseOnExit raise{release}; launch_latch(release.counter.data(), release.issued, kLatchTimeoutMs, s);
//     ... queue the work and its events on s ... }          // raised here
//   if (release.timed_out()) ...                             // the host was too slow: the sample times it
#pragma once

#include "device_buffer.h"

#include <cuda_runtime_api.h>

namespace workbook::multi_gpu {

inline constexpr double kLatchTimeoutMs = 1000.0;  // far longer than the host takes to queue a batch

// Holds `stream` until the host raises release[0] to at least `ticket`, or for timeout_ms at most,
// in which case it writes `ticket` to release[1]. `release` is two unsigneds of pinned host memory
// (with unified addressing the GPU reads and writes it by the same pointer).
void launch_latch(unsigned* release, unsigned ticket, double timeout_ms, cudaStream_t stream);

// The host side: [0] the counter the host raises, one ticket per sample; [1] the ticket of a latch
// that gave up waiting (0: none did).
struct LatchRelease {
  PinnedBuffer<unsigned> counter{2};
  unsigned issued = 0;
  LatchRelease() { counter.data()[0] = counter.data()[1] = 0; }
  void raise() { static_cast<volatile unsigned*>(counter.data())[0] = issued; }
  bool timed_out() const { return static_cast<const volatile unsigned*>(counter.data())[1] != 0; }
};

// Raises the latch when it leaves scope, also on an exception between launch and raise, so that
// no latch kernel is left polling memory that is about to be freed.
struct RaiseOnExit {
  LatchRelease& release;
  ~RaiseOnExit() { release.raise(); }
};

}  // namespace workbook::multi_gpu

// Planted mistakes for exercise 03 fork_join: a whole attempt, right unless one PLANTED_<NAME> is
// defined (CMakeLists.txt names the words each one's verdict must hold).
#include "fork_join.h"

#include "cuda_check.h"

namespace workbook::streams_events::exercise {

void fork(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
#if defined(PLANTED_WAIT_FIRST)
  // The waits are queued before the record: they wait for nothing.
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaStreamWaitEvent(streams[k], events[0], 0));
  CUDA_CHECK(cudaEventRecord(events[0], streams[0]));
#else
  CUDA_CHECK(cudaEventRecord(events[0], streams[0]));
#if defined(PLANTED_FIRST_SIDE_ONLY)
  if (streams.size() > 1) CUDA_CHECK(cudaStreamWaitEvent(streams[1], events[0], 0));  // the others run free
#else
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaStreamWaitEvent(streams[k], events[0], 0));
#endif
#endif
}

void join(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
#if defined(PLANTED_ONE_EVENT)
  // One event recorded on every side stream, then one wait: it marks the last record only.
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaEventRecord(events[0], streams[k]));
  CUDA_CHECK(cudaStreamWaitEvent(streams[0], events[0], 0));
#elif defined(PLANTED_BACKWARDS)
  // A second fork: the side streams wait for the origin, not the origin for them.
  CUDA_CHECK(cudaEventRecord(events[0], streams[0]));
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaStreamWaitEvent(streams[k], events[0], 0));
#elif defined(PLANTED_HOST_WAIT)
  (void)events;
  for (std::size_t k = 1; k < streams.size(); ++k) CUDA_CHECK(cudaStreamSynchronize(streams[k]));  // blocks the host
#else
  for (std::size_t k = 1; k < streams.size(); ++k) {
    CUDA_CHECK(cudaEventRecord(events[k], streams[k]));
    CUDA_CHECK(cudaStreamWaitEvent(streams[0], events[k], 0));
  }
#endif
}

}  // namespace workbook::streams_events::exercise

// The worked answer of exercise 03 fork_join: the lesson's ForkJoin (streams_events.cu) behind the
// exercise's signature (the checker's test: it must print "correct"). ForkJoin owns its events;
// a wait keeps the record it saw, so they may go as soon as the waits are queued.
#include "fork_join.h"

#include "streams_events.h"

namespace workbook::streams_events::exercise {

void fork(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
  (void)events;
  ForkJoin(streams.size()).fork(streams);
}

void join(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
  (void)events;
  ForkJoin(streams.size()).join(streams);
}

}  // namespace workbook::streams_events::exercise

// exchange.h: how the three sums of an epoch meet (--exchange), in plain C++ (no CUDA, no NCCL):
// the names of the three ways, and what a GPU that waits for its peers tells the host.
//
//   ExchangeKind kind = parse_exchange("one_shot");          // UsageError for anything else
//   std::cout << exchange_name(kind);                         // "one_shot"
//   if (auto why = exchange_failure(signals, epochs)) ...     // a peer never came: which, when
//
// nccl            ncclAllReduce of the 3 floats, in the replica's own buffer (cudaMalloc)
// nccl_symmetric  the same ncclAllReduce on a buffer from ncclMemAlloc registered as a symmetric
//                 window (symmetric_windows.h), so that NCCL may pick its low-latency kernels
// one_shot        written by hand (one_shot_exchange.h): each GPU writes its sums into a slot of
//                 every GPU's mailbox and waits for the others' tags; no NCCL call in the loop
//
// The CPU tests check all of it.
#pragma once

#include <optional>
#include <string>

namespace workbook::multi_gpu {

enum class ExchangeKind { kNccl, kNcclSymmetric, kOneShot };

// "nccl", "nccl_symmetric", "one_shot".
const char* exchange_name(ExchangeKind kind);

// The name as --exchange takes it; UsageError ("--exchange must be nccl, nccl_symmetric or
// one_shot, got 'ring'") for anything else.
ExchangeKind parse_exchange(const std::string& text);

// What a one-shot exchange shares with the host, in pinned host memory that the GPU reads and
// writes over PCIe (only while something is wrong: a healthy epoch never touches it).
//   abort     the host sets it (Communicator::abort, the mailbox's destructor): a kernel that
//             waits for a peer returns within microseconds instead of at its timeout
//   code      the GPU sets it when a wait gave up: kTimedOut or kAborted; 0 while all is well
//   rank      the rank whose slot never got the awaited tag
//   sequence  the exchange it waited for (1 = the first exchange of the first run)
struct ExchangeSignals {
  unsigned abort = 0;
  unsigned code = 0;
  int rank = -1;
  unsigned sequence = 0;
};
inline constexpr unsigned kExchangeTimedOut = 1;
inline constexpr unsigned kExchangeAborted = 2;

// nullopt while `code` is 0; else one line naming the rank and the epoch (exchange s is epoch
// (s - 1) % epochs_per_run of run (s - 1) / epochs_per_run, the warm-up run being run 0), e.g.
// "the one-shot exchange gave up after 20 s waiting for rank 1's sums of epoch 5 (run 0): rank 1
// died or hangs". With epochs_per_run 0 (the bench's exchanges outside training) it names the
// exchange instead: "... rank 1's sums of exchange 7: ...". Reads `signals` through volatile loads
// (the GPU may write it meanwhile).
std::optional<std::string> exchange_failure(const ExchangeSignals& signals, int epochs_per_run, double timeout_s);

}  // namespace workbook::multi_gpu

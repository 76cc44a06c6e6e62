// exchange.cpp: the --exchange names, and the one line a failed one-shot wait becomes.
#include "exchange.h"

#include "exit_codes.h"

#include <atomic>
#include <sstream>

namespace workbook::multi_gpu {

const char* exchange_name(ExchangeKind kind) {
  switch (kind) {
    case ExchangeKind::kNccl: return "nccl";
    case ExchangeKind::kNcclSymmetric: return "nccl_symmetric";
    case ExchangeKind::kOneShot: return "one_shot";
  }
  return "?";
}

ExchangeKind parse_exchange(const std::string& text) {
  for (ExchangeKind k : {ExchangeKind::kNccl, ExchangeKind::kNcclSymmetric, ExchangeKind::kOneShot}) {
    if (text == exchange_name(k)) return k;
  }
  throw UsageError("--exchange must be nccl, nccl_symmetric or one_shot, got '" + text + "'");
}

std::optional<std::string> exchange_failure(const ExchangeSignals& signals, int epochs_per_run, double timeout_s) {
  const volatile ExchangeSignals& s = signals;
  const unsigned code = s.code;
  if (code == 0) return std::nullopt;
  std::atomic_thread_fence(std::memory_order_acquire);  // the GPU wrote rank and sequence before code
  const int rank = s.rank;
  const unsigned sequence = s.sequence;
  const unsigned index = sequence > 0 ? sequence - 1 : 0;
  std::ostringstream line;
  line << "the one-shot exchange ";
  if (code == kExchangeAborted) {
    line << "was stopped by the host while waiting for rank " << rank << "'s sums";
  } else {
    line << "gave up after " << timeout_s << " s waiting for rank " << rank << "'s sums";
  }
  if (epochs_per_run > 0) {
    const auto per_run = static_cast<unsigned>(epochs_per_run);
    line << " of epoch " << index % per_run << " (run " << index / per_run << ")";
  } else {
    line << " of exchange " << sequence;
  }
  if (code != kExchangeAborted) line << ": rank " << rank << " died or hangs";
  return line.str();
}

}  // namespace workbook::multi_gpu

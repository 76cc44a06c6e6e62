// nccl_check.h: turn every failed NCCL call into a workbook::NcclError exception.
//
//   NCCL_CHECK(ncclCommInitAll(comms.data(), count, devices.data()));   // throws on failure
//
// The message names the call site and the expression, NCCL's own text for the result code, the
// code itself and, where NCCL recorded one, its last error message (ncclGetLastError: which rank,
// which transport, which system call). main() catches it once, like a CudaError (see program.h).
//
// Header-only: only the chapters that link NCCL include it. A non-blocking communicator
// (ncclConfig_t::blocking = 0) may return ncclInProgress; that is not an error, so code that uses
// one checks those calls itself (06_multi_gpu/nccl_comm.h) and uses NCCL_CHECK for the rest.
#pragma once

#include <nccl.h>

#include <stdexcept>
#include <string>

namespace workbook {

class NcclError : public std::runtime_error {
 public:
  NcclError(ncclResult_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ncclResult_t code() const noexcept { return code_; }

 private:
  ncclResult_t code_;
};

// "<file>:<line>: <expression> failed: <ncclGetErrorString> (ncclResult_t <code>)[: <last error>]"
inline std::string nccl_error_text(ncclResult_t code, const char* expression, const char* file, int line) {
  std::string text = std::string(file) + ":" + std::to_string(line) + ": " + expression + " failed: " +
                     ncclGetErrorString(code) + " (ncclResult_t " + std::to_string(static_cast<int>(code)) + ")";
  const char* last = ncclGetLastError(nullptr);  // the thread's last NCCL error message, if any
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  return text;
}

[[noreturn]] inline void throw_nccl_error(ncclResult_t code, const char* expression, const char* file, int line) {
  throw NcclError(code, nccl_error_text(code, expression, file, line));
}

// The NCCL library this process loaded, "2.28.3", for the provenance of what a run writes
// (provenance.h). The headers' version where the library cannot say.
inline std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) code = NCCL_VERSION_CODE;
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace workbook

#define NCCL_CHECK(expr)                                                            \
  do {                                                                              \
    const ncclResult_t workbook_nccl_status_ = (expr);                              \
    if (workbook_nccl_status_ != ncclSuccess) {                                     \
      ::workbook::throw_nccl_error(workbook_nccl_status_, #expr, __FILE__, __LINE__); \
    }                                                                               \
  } while (0)

// cublas_check.h: turn every failed cuBLAS call into a workbook::CublasError exception.
//
//   CUBLAS_CHECK(cublasCreate(&handle));   // throws on failure, naming this file and line
//
// main() catches it once, like a CudaError (see program.h), and prints
//   error: <file>:<line>: <expression> failed: <cublasGetStatusName>: <cublasGetStatusString>
//
// Header-only: only the programs that link cuBLAS (CUDA::cublas) include it.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace workbook {

class CublasError : public std::runtime_error {
 public:
  CublasError(cublasStatus_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  cublasStatus_t code() const noexcept { return code_; }

 private:
  cublasStatus_t code_;
};

// The status's name and text come from cuBLAS itself; neither needs a GPU.
inline std::string cublas_error_text(cublasStatus_t code, const char* expression, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + expression + " failed: " +
         cublasGetStatusName(code) + ": " + cublasGetStatusString(code);
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t code, const char* expression, const char* file, int line) {
  throw CublasError(code, cublas_error_text(code, expression, file, line));
}

}  // namespace workbook

#define CUBLAS_CHECK(expr)                                                              \
  do {                                                                                  \
    const cublasStatus_t workbook_cublas_status_ = (expr);                              \
    if (workbook_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                             \
      ::workbook::throw_cublas_error(workbook_cublas_status_, #expr, __FILE__, __LINE__); \
    }                                                                                   \
  } while (0)

// cuda_check.cpp: the message format of workbook::CudaError.
#include "cuda_check.h"

namespace workbook {
namespace {

std::string describe(cudaError_t code, const char* expression, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + expression + " failed: " +
         cudaGetErrorName(code) + ": " + cudaGetErrorString(code);
}

}  // namespace

CudaError::CudaError(cudaError_t code, const char* expression, const char* file, int line)
    : std::runtime_error(describe(code, expression, file, line)), code_(code) {}

void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line) {
  // A failed call also leaves its error as the thread's "last error" (cudaSetDevice(7) on a
  // one-GPU machine does): read it here, so that a caller who catches this and goes on is not
  // told of it again by the next launch's check. A sticky error (a fault inside a kernel) stays.
  (void)cudaGetLastError();
  throw CudaError(code, expression, file, line);
}

}  // namespace workbook

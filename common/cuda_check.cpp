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
  throw CudaError(code, expression, file, line);
}

}  // namespace workbook

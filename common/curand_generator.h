// curand_generator.h: CURAND_CHECK, and an owner of a cuRAND generator (torch.randn underneath).
//
//   workbook::CurandGenerator gen(workbook::RngLocation::kDevice, /*seed=*/42, stream);
//   gen.normal(d_out, n, 0.0f, 1.0f);        // a Philox kernel writes n normals on the GPU
//   workbook::CurandGenerator host(workbook::RngLocation::kHost, 42);
//   host.normal(h_out, n, 0.0f, 1.0f);       // the same numbers, made by the CPU
//
// Header-only, because only the chapters that link CUDA::curand include it. On the device, n
// must be even: the normal generator makes pairs (Box-Muller).
#pragma once

#include <cuda_runtime_api.h>
#include <curand.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace workbook {

// cuRAND has no error-string function; these are its status names.
inline const char* curand_status_name(curandStatus_t status) {
  switch (status) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "unknown curandStatus_t";
}

// A failed cuRAND call, with its status kept for a caller that can go on without it (02 does, where
// the driver is told to compile every kernel from PTX and cuRAND's kernels have none for this GPU).
class CurandError : public std::runtime_error {
 public:
  CurandError(curandStatus_t status, const std::string& what) : std::runtime_error(what), status_(status) {}
  curandStatus_t status() const { return status_; }

 private:
  curandStatus_t status_;
};

[[noreturn]] inline void throw_curand_error(curandStatus_t status, const char* expression, const char* file,
                                            int line) {
  throw CurandError(status, std::string(file) + ":" + std::to_string(line) + ": " + expression + " failed: " +
                                curand_status_name(status) + " (" + std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace workbook

#define CURAND_CHECK(expr)                                                        \
  do {                                                                            \
    const curandStatus_t workbook_curand_status_ = (expr);                        \
    if (workbook_curand_status_ != CURAND_STATUS_SUCCESS) {                       \
      ::workbook::throw_curand_error(workbook_curand_status_, #expr, __FILE__, __LINE__); \
    }                                                                             \
  } while (0)

namespace workbook {

enum class RngLocation { kDevice, kHost };

// A Philox4x32-10 generator: the counter-based generator PyTorch also uses on the GPU. The device
// and host generators give the same numbers for the same seed.
class CurandGenerator {
 public:
  CurandGenerator(RngLocation where, std::uint64_t seed, cudaStream_t stream = nullptr) {
    if (where == RngLocation::kDevice) {
      CURAND_CHECK(curandCreateGenerator(&generator_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    } else {
      CURAND_CHECK(curandCreateGeneratorHost(&generator_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    }
    try {
      CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, seed));
      if (where == RngLocation::kDevice) CURAND_CHECK(curandSetStream(generator_, stream));
    } catch (...) {
      curandDestroyGenerator(generator_);
      throw;
    }
  }
  ~CurandGenerator() { (void)curandDestroyGenerator(generator_); }
  CurandGenerator(const CurandGenerator&) = delete;
  CurandGenerator& operator=(const CurandGenerator&) = delete;

  // n normals of the given mean and standard deviation into `out` (device or host memory, as the
  // generator's location); on the device n must be even.
  void normal(float* out, std::size_t n, float mean, float stddev) {
    CURAND_CHECK(curandGenerateNormal(generator_, out, n, mean, stddev));
  }

  curandGenerator_t get() const { return generator_; }

 private:
  curandGenerator_t generator_ = nullptr;
};

}  // namespace workbook

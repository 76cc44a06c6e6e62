// device_query.h: the questions torch.cuda asks the CUDA runtime, as plain functions.
//
//   torch.cuda.get_device_properties(i)    -> query_device(i)
//   "CUDA cores", tensor cores, peak FLOP/s -> compute_peaks(cc, SMs, clock): what the article's
//                                             GPU specifications mean, as arithmetic
//   torch.cuda.can_device_access_peer(a,b) -> peer_access_matrix(n)[a][b]
//   torch.cuda.mem_get_info()              -> memory_info()
//   memory_allocated() / memory_reserved() -> measure_memory_accounting(): a stream-ordered memory
//                                             pool plays PyTorch's caching allocator
//
// Nothing here launches a kernel; chapter 02 is where data moves.
#pragma once

#include "gpu_memory.h"  // memory_info

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace workbook::device_query {

// What one device reports. Fields that CUDA 13 dropped from cudaDeviceProp (the clocks) are read
// with cudaDeviceGetAttribute.
struct DeviceReport {
  int index = 0;
  std::string name;
  std::string pci_bus_id;  // domain:bus:device.function (nvidia-smi pads the domain to 8 digits)
  int major = 0, minor = 0;
  int multiprocessors = 0;
  std::size_t total_global_mem = 0;  // bytes
  std::size_t free_global_mem = 0;   // bytes, cudaMemGetInfo at query time
  int l2_cache_bytes = 0;
  std::size_t shared_mem_per_block = 0;        // default limit
  std::size_t shared_mem_per_block_optin = 0;  // after cudaFuncSetAttribute
  std::size_t shared_mem_per_multiprocessor = 0;
  int registers_per_block = 0;
  int registers_per_multiprocessor = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
  std::array<int, 3> max_block_dim{};
  std::array<int, 3> max_grid_dim{};
  int async_engine_count = 0;  // copy engines: 2 means H2D and D2H can run at the same time
  int sm_clock_khz = 0;        // peak
  int memory_clock_khz = 0;    // peak
  int memory_bus_width_bits = 0;
  bool ecc_enabled = false;
  bool unified_addressing = false;
  bool concurrent_kernels = false;
  bool cooperative_launch = false;
  bool memory_pools = false;  // stream-ordered allocation (cudaMallocAsync) is supported
};

DeviceReport query_device(int device);

// Theoretical peak DRAM bandwidth in GB/s: two transfers per memory clock (double data rate) over
// a bus of `bus_width_bits`. Only a ceiling: copies reach 80-90% of it (chapter 02).
double peak_memory_bandwidth_gbps(int memory_clock_khz, int bus_width_bits);

// What the SM count and the clock buy. NVIDIA's "CUDA cores" are the FP32 lanes of all SMs: each
// does one fused multiply-add (2 FLOP) per clock. Tensor cores multiply small matrices; their
// dense rates per SM per clock come from the A100 and H100 datasheets (tests/test_01 reproduces
// 312 and 989 TFLOPS BF16). Empty where this table does not know the architecture: never a guess.
struct ComputePeaks {
  std::optional<int> fp32_lanes_per_sm;
  std::optional<int> cuda_cores;             // SMs x fp32_lanes_per_sm
  std::optional<double> fp32_tflops;         // cuda_cores x 2 FLOP x clock
  std::optional<double> tf32_tensor_tflops;  // dense (no 2:4 sparsity), FP32 accumulate
  std::optional<double> bf16_tensor_tflops;  // dense, FP32 accumulate
};

// FP32 lanes per SM by compute capability (7.0, 7.5 and 8.0: 64; 8.6, 8.7, 8.9, 9.0, 10.x and
// 12.x: 128); empty for any other.
std::optional<int> fp32_lanes_per_sm(int major, int minor);

// Dense BF16 tensor-core FLOP per clock per SM with FP32 accumulate (TF32 runs at half of it):
// 2048 on sm_80, 4096 on sm_90. Empty elsewhere: below 8.0 there is no BF16 or TF32 on tensor
// cores, and on 8.6 and 8.9 the rate depends on the product (GeForce cards halve FP32 accumulate).
// Keyed on the compute capability alone: the full-rate A100 and H100/H200; an export part with the
// same capability and cut tensor rates (the H20 on 9.0) gets the full-rate figure.
std::optional<int> bf16_tensor_flop_per_clock_per_sm(int major, int minor);

// The peaks of a GPU with `multiprocessors` SMs at `clock_khz` (cudaDevAttrClockRate, the highest
// SM clock). Pure, so the CPU tests check it against published figures. At the clock the runtime
// reports for an H100 or H200 SXM (1980 MHz) the tensor peaks come out 8% above NVIDIA's, which
// use 1830 MHz, the highest clock those cards promise for tensor-core math.
ComputePeaks compute_peaks(int major, int minor, int multiprocessors, int clock_khz);

// What the report prints where a peak is empty: "not known for sm_86", or for a GPU older than
// Ampere, "no TF32/BF16 tensor cores on sm_75".
std::string unknown_peak_text(int major, int minor, bool tensor);

// matrix[a][b] is true when device a can read and write device b's memory directly (P2P).
std::vector<std::vector<bool>> peer_access_matrix(int device_count);

// memory_info() (cudaMemGetInfo on the current device): common/gpu_memory.h.

// One step of the accounting walk-through: what the driver sees (cudaMemGetInfo) and what the
// pool reports, the analogues of memory_allocated() ("used") and memory_reserved() ("reserved").
struct AccountingStep {
  std::string what;
  std::size_t driver_free = 0;
  std::size_t pool_used = 0;
  std::size_t pool_reserved = 0;
};

// On the current device: cudaMalloc / cudaFree of `bytes`, then the same through a stream-ordered
// pool that keeps freed memory (like PyTorch's caching allocator), then a trim of the pool
// (torch.cuda.empty_cache()). Returns the steps in order. Needs DeviceReport::memory_pools.
std::vector<AccountingStep> measure_memory_accounting(std::size_t bytes);

}  // namespace workbook::device_query

// device_query.cpp: device properties, peer access and memory accounting through the CUDA runtime.
#include "device_query.h"

#include "cuda_check.h"
#include "device_buffer.h"
#include "stream.h"

#include <cstddef>
#include <cstdint>

namespace device_query {

namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// Makes `device` current for one scope and restores the previous one, also when a call throws.
class CurrentDeviceGuard {
 public:
  explicit CurrentDeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    CUDA_CHECK(cudaSetDevice(device));
  }
  ~CurrentDeviceGuard() { (void)cudaSetDevice(previous_); }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

DeviceReport query_device(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceReport r;
  r.index = device;
  r.name = prop.name;
  char bus_id[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  r.pci_bus_id = bus_id;
  r.major = prop.major;
  r.minor = prop.minor;
  r.multiprocessors = prop.multiProcessorCount;
  r.total_global_mem = prop.totalGlobalMem;
  r.l2_cache_bytes = prop.l2CacheSize;
  r.shared_mem_per_block = prop.sharedMemPerBlock;
  r.shared_mem_per_block_optin = prop.sharedMemPerBlockOptin;
  r.shared_mem_per_multiprocessor = prop.sharedMemPerMultiprocessor;
  r.registers_per_block = prop.regsPerBlock;
  r.registers_per_multiprocessor = prop.regsPerMultiprocessor;
  r.warp_size = prop.warpSize;
  r.max_threads_per_block = prop.maxThreadsPerBlock;
  r.max_threads_per_multiprocessor = prop.maxThreadsPerMultiProcessor;
  for (int i = 0; i < 3; ++i) {
    r.max_block_dim[i] = prop.maxThreadsDim[i];
    r.max_grid_dim[i] = prop.maxGridSize[i];
  }
  r.async_engine_count = prop.asyncEngineCount;
  // CUDA 13 removed clockRate and memoryClockRate from cudaDeviceProp; the attributes remain.
  r.sm_clock_khz = attribute(cudaDevAttrClockRate, device);
  r.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  r.memory_bus_width_bits = prop.memoryBusWidth;
  r.ecc_enabled = prop.ECCEnabled != 0;
  r.unified_addressing = prop.unifiedAddressing != 0;
  r.concurrent_kernels = prop.concurrentKernels != 0;
  r.cooperative_launch = prop.cooperativeLaunch != 0;

  // Free memory is a property of the moment, and cudaMemGetInfo answers for the current device,
  // so asking about device d creates d's context (about 0.5 GiB), as torch.cuda.mem_get_info(d)
  // does; get_device_properties(d) alone does not.
  CurrentDeviceGuard on(device);
  r.free_global_mem = memory_info().free;
  r.memory_pools = attribute(cudaDevAttrMemoryPoolsSupported, device) != 0;
  return r;
}

double peak_memory_bandwidth_gbps(int memory_clock_khz, int bus_width_bits) {
  const double transfers_per_second = 2.0 * memory_clock_khz * 1e3;
  return transfers_per_second * (bus_width_bits / 8.0) / 1e9;
}

std::vector<std::vector<bool>> peer_access_matrix(int device_count) {
  std::vector<std::vector<bool>> matrix(device_count, std::vector<bool>(device_count, false));
  for (int a = 0; a < device_count; ++a) {
    for (int b = 0; b < device_count; ++b) {
      if (a == b) continue;  // a device always reaches its own memory; P2P is about the others
      int can = 0;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      matrix[a][b] = can != 0;
    }
  }
  return matrix;
}

MemoryInfo memory_info() {
  MemoryInfo m;
  CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

namespace {

// A pool of its own, so that nothing else in the process shares its counters, told to keep every
// freed byte: PyTorch's caching allocator behaves the same way until empty_cache().
class KeepingPool {
 public:
  explicit KeepingPool(int device) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    std::uint64_t keep_everything = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  }
  ~KeepingPool() { (void)cudaMemPoolDestroy(pool_); }
  KeepingPool(const KeepingPool&) = delete;
  KeepingPool& operator=(const KeepingPool&) = delete;

  cudaMemPool_t get() const { return pool_; }
  void trim() { CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0)); }
  std::size_t counter(cudaMemPoolAttr attr) const {
    std::uint64_t value = 0;
    CUDA_CHECK(cudaMemPoolGetAttribute(pool_, attr, &value));
    return static_cast<std::size_t>(value);
  }

 private:
  cudaMemPool_t pool_ = nullptr;
};

// One block from the pool, returned to it (not to the driver) when the owner goes away.
class PooledBlock {
 public:
  PooledBlock(const KeepingPool& pool, std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    CUDA_CHECK(cudaMallocFromPoolAsync(&data_, bytes, pool.get(), stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  ~PooledBlock() { release(); }
  PooledBlock(const PooledBlock&) = delete;
  PooledBlock& operator=(const PooledBlock&) = delete;

  void release() noexcept {
    if (data_ == nullptr) return;
    (void)cudaFreeAsync(data_, stream_);
    (void)cudaStreamSynchronize(stream_);
    data_ = nullptr;
  }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

std::vector<AccountingStep> measure_memory_accounting(std::size_t bytes) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  KeepingPool pool(device);
  workbook::Stream stream;
  std::vector<AccountingStep> steps;
  auto note = [&](const char* what) {
    steps.push_back({what, memory_info().free, pool.counter(cudaMemPoolAttrUsedMemCurrent),
                     pool.counter(cudaMemPoolAttrReservedMemCurrent)});
  };

  note("start (CUDA context created)");

  workbook::DeviceBuffer<std::byte> plain(bytes);  // cudaMalloc
  note("cudaMalloc");
  plain.reset();                                   // cudaFree
  note("cudaFree");

  PooledBlock pooled(pool, bytes, stream.get());
  note("pool: cudaMallocFromPoolAsync");
  pooled.release();
  note("pool: cudaFreeAsync");
  pool.trim();
  note("pool: cudaMemPoolTrimTo(0)");
  return steps;
}

}  // namespace device_query

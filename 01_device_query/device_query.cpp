// device_query.cpp: chapter 01's lesson. What torch.cuda.is_available(), device_count(),
// get_device_properties(), can_device_access_peer(), mem_get_info(), memory_allocated() and
// memory_reserved() ask the CUDA runtime, as plain runtime calls. No kernel runs here: every
// answer comes from the runtime and the driver. Read it beside "How to Use CUDA with PyTorch:
// Clearly Explained" (checking availability, device count, monitoring memory, GPU specifications).
//
// The steps, numbered as the report prints them (== 1. ...): 1. availability and the runtime
// (in the program part, at the bottom); 2. the properties of one device, with its peak memory
// bandwidth and what the SMs and the clock buy ("CUDA cores", tensor cores, peak FLOP/s);
// 3. peer access; 4. the memory-accounting walk-through (a stream-ordered pool plays PyTorch's
// caching allocator). device_query_bench (bench_matmul.cu) measures how close matmuls get to the peaks.
//
//   device_query                 every device, then memory accounting on device 0
//   device_query --device 1      one device (made current, as torch.cuda.set_device(1))
//   device_query --json out.json the same facts as one JSON object
//
// No GPU is an answer here, not an error: "CUDA available: no (<reason>)" and exit 0, --device N
// or not. With GPUs, a --device index that is not one of them exits 2 naming those that are.
#include "device_query.h"

#include "cuda_check.h"
#include "device_guard.h"
#include "device_buffer.h"
#include "gpu_memory.h"
#include "stream.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace workbook::device_query {

// ---------------------------------------------------------------------------------------------
// 2. What one device is: torch.cuda.get_device_properties(i).
namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// Makes `device` current for one scope and restores the previous one, also when a call throws.

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
  DeviceGuard on(device);  // common/device_guard.h
  r.free_global_mem = memory_info().free;
  r.memory_pools = attribute(cudaDevAttrMemoryPoolsSupported, device) != 0;
  return r;
}

// ---------------------------------------------------------------------------------------------
// 2. (continued) The ceiling of memory bandwidth, as arithmetic.
double peak_memory_bandwidth_gbps(int memory_clock_khz, int bus_width_bits) {
  const double transfers_per_second = 2.0 * memory_clock_khz * 1e3;
  return transfers_per_second * (bus_width_bits / 8.0) / 1e9;
}

// ---------------------------------------------------------------------------------------------
// 2. (continued) What the specifications buy: "CUDA cores", tensor cores and peak FLOP/s, as arithmetic.
std::optional<int> fp32_lanes_per_sm(int major, int minor) {
  // The CUDA Programming Guide's throughput table (32-bit floating-point add, multiply, FMA per
  // clock per SM). A100 (8.0): 108 SMs x 64 = 6912, the article's count; RTX 3080 (8.6): 68 x 128
  // = 8704.
  if (major == 7 && (minor == 0 || minor == 5)) return 64;
  if (major == 8 && minor == 0) return 64;
  if (major == 8 && (minor == 6 || minor == 7 || minor == 9)) return 128;
  if (major == 9 && minor == 0) return 128;
  if (major == 10 || major == 12) return 128;
  return std::nullopt;
}

std::optional<int> bf16_tensor_flop_per_clock_per_sm(int major, int minor) {
  // Four tensor cores per SM: 256 dense FMA per clock each on Ampere (A100: 108 x 2048 FLOP x
  // 1.41 GHz = 312 TFLOPS), twice that on Hopper (H100 SXM: 132 x 4096 x 1.83 GHz = 989 TFLOPS).
  if (major == 8 && minor == 0) return 2048;
  if (major == 9 && minor == 0) return 4096;
  return std::nullopt;
}

ComputePeaks compute_peaks(int major, int minor, int multiprocessors, int clock_khz) {
  const double clocks_per_second = clock_khz * 1e3;
  ComputePeaks p;
  p.fp32_lanes_per_sm = fp32_lanes_per_sm(major, minor);
  if (p.fp32_lanes_per_sm) {
    p.cuda_cores = multiprocessors * *p.fp32_lanes_per_sm;
    p.fp32_tflops = *p.cuda_cores * 2.0 * clocks_per_second / 1e12;  // one FMA = 2 FLOP per lane per clock
  }
  if (const auto bf16 = bf16_tensor_flop_per_clock_per_sm(major, minor)) {
    p.bf16_tensor_tflops = multiprocessors * static_cast<double>(*bf16) * clocks_per_second / 1e12;
    p.tf32_tensor_tflops = *p.bf16_tensor_tflops / 2.0;  // 32-bit operands: half as many per clock
  }
  return p;
}

std::string unknown_peak_text(int major, int minor, bool tensor) {
  const std::string sm = "sm_" + std::to_string(major) + std::to_string(minor);
  if (tensor && major < 8) return "no TF32/BF16 tensor cores on " + sm;
  return "not known for " + sm;
}

// ---------------------------------------------------------------------------------------------
// 3. Which devices reach each other's memory.
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

// ---------------------------------------------------------------------------------------------
// 4. Memory accounting: what the driver sees, and what a caching pool keeps.
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
    try {  // a constructor that throws runs no destructor: the pool goes here
      CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything));
    } catch (...) {
      (void)cudaMemPoolDestroy(pool_);
      throw;
    }
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
  ~PooledBlock() {
    if (data_ != nullptr && cudaFreeAsync(data_, stream_) == cudaSuccess) (void)cudaStreamSynchronize(stream_);
  }
  PooledBlock(const PooledBlock&) = delete;
  PooledBlock& operator=(const PooledBlock&) = delete;

  // Back to the pool, checked; the destructor does the same without throwing.
  void release() {
    if (data_ == nullptr) return;
    void* data = std::exchange(data_, nullptr);
    CUDA_CHECK(cudaFreeAsync(data, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
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

}  // namespace workbook::device_query

// ---------------------------------------------------------------------------------------------
// The program, in the order it prints: 1. the runtime's answers, 2. one table of device
// properties, 3. the peer matrix, 4. the accounting walk-through checked step by step. The
// README's one-line nvcc build of the bench leaves it out with -DWORKBOOK_LESSON_LIBRARY (CMake
// renames its main() instead: cmake/WorkbookChapter.cmake).
#ifndef WORKBOOK_LESSON_LIBRARY
#include "cli.h"
#include "format.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "report.h"
#include "stats.h"
#include "table.h"

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace workbook::device_query {
namespace {

using Style = Column::Style;

// One column per property, one row per device; printed turned (a line per property).
Table device_table() {
  return Table({{"index", "device"}, {"name", "name"}, {"compute_capability", "compute capability"},
                {"pci_bus_id", "PCI bus id"}, {"multiprocessors", "multiprocessors (SMs)"},
                {"total_global_mem_bytes", "global memory, total", -1, Style::kBytes},
                {"free_global_mem_bytes", "global memory, free now", -1, Style::kBytes},
                {"l2_cache_bytes", "L2 cache", -1, Style::kBytes},
                {"shared_mem_per_block_bytes", "shared memory per block", -1, Style::kBytes},
                {"shared_mem_per_block_optin_bytes", "  opt-in (cudaFuncSetAttribute)", -1, Style::kBytes},
                {"shared_mem_per_multiprocessor_bytes", "shared memory per SM", -1, Style::kBytes},
                {"registers_per_block", "32-bit registers per block"},
                {"registers_per_multiprocessor", "32-bit registers per SM"}, {"warp_size", "warp size"},
                {"max_threads_per_block", "threads per block, max"},
                {"max_threads_per_multiprocessor", "threads per SM, max"},
                {"max_block_dim", "block dimensions, max"}, {"max_grid_dim", "grid dimensions, max"},
                {"async_engine_count", "copy engines"}, {"sm_clock_mhz", "SM clock, peak (MHz)"},
                {"fp32_lanes_per_sm", "FP32 lanes per SM"}, {"cuda_cores", "CUDA cores (SMs x FP32 lanes)"},
                {"peak_fp32_tflops", "peak FP32 TFLOP/s, CUDA cores", 1},
                {"peak_tf32_tensor_tflops", "peak TF32 TFLOP/s, tensor cores", 1},
                {"peak_bf16_tensor_tflops", "peak BF16 TFLOP/s, tensor cores", 1},
                {"memory_clock_mhz", "memory clock, peak (MHz)"}, {"memory_bus_width_bits", "memory bus width (bits)"},
                {"peak_memory_bandwidth_gbps", "peak memory bandwidth (GB/s)", 0},
                {"ecc_enabled", "ECC enabled"}, {"unified_addressing", "unified addressing"},
                {"concurrent_kernels", "concurrent kernels"}, {"cooperative_launch", "cooperative launch"},
                {"memory_pools", "memory pools (cudaMallocAsync)"}});
}

// An empty peak is printed as what is missing ("not known for sm_86"), never as a guess.
template <class T>
nlohmann::json known_or(const std::optional<T>& value, const std::string& otherwise) {
  return value ? nlohmann::json(*value) : nlohmann::json(otherwise);
}

void add_device(Table& table, const DeviceReport& d) {
  const ComputePeaks peaks = compute_peaks(d.major, d.minor, d.multiprocessors, d.sm_clock_khz);
  const std::string unknown = unknown_peak_text(d.major, d.minor, false);
  const std::string no_tensor = unknown_peak_text(d.major, d.minor, true);
  table.add_row()
      .set("index", d.index).set("name", d.name)
      .set("compute_capability", std::to_string(d.major) + "." + std::to_string(d.minor))
      .set("pci_bus_id", d.pci_bus_id).set("multiprocessors", d.multiprocessors)
      .set("total_global_mem_bytes", d.total_global_mem).set("free_global_mem_bytes", d.free_global_mem)
      .set("l2_cache_bytes", d.l2_cache_bytes).set("shared_mem_per_block_bytes", d.shared_mem_per_block)
      .set("shared_mem_per_block_optin_bytes", d.shared_mem_per_block_optin)
      .set("shared_mem_per_multiprocessor_bytes", d.shared_mem_per_multiprocessor)
      .set("registers_per_block", d.registers_per_block).set("registers_per_multiprocessor", d.registers_per_multiprocessor)
      .set("warp_size", d.warp_size).set("max_threads_per_block", d.max_threads_per_block)
      .set("max_threads_per_multiprocessor", d.max_threads_per_multiprocessor)
      .set("max_block_dim", d.max_block_dim).set("max_grid_dim", d.max_grid_dim)
      .set("async_engine_count", d.async_engine_count).set("sm_clock_mhz", d.sm_clock_khz / 1000)
      .set("fp32_lanes_per_sm", known_or(peaks.fp32_lanes_per_sm, unknown))
      .set("cuda_cores", known_or(peaks.cuda_cores, unknown))
      .set("peak_fp32_tflops", known_or(peaks.fp32_tflops, unknown))
      .set("peak_tf32_tensor_tflops", known_or(peaks.tf32_tensor_tflops, no_tensor))
      .set("peak_bf16_tensor_tflops", known_or(peaks.bf16_tensor_tflops, no_tensor))
      .set("memory_clock_mhz", d.memory_clock_khz / 1000).set("memory_bus_width_bits", d.memory_bus_width_bits)
      .set("peak_memory_bandwidth_gbps", peak_memory_bandwidth_gbps(d.memory_clock_khz, d.memory_bus_width_bits))
      .set("ecc_enabled", d.ecc_enabled).set("unified_addressing", d.unified_addressing)
      .set("concurrent_kernels", d.concurrent_kernels).set("cooperative_launch", d.cooperative_launch)
      .set("memory_pools", d.memory_pools);
}

// Row a, column "to b": can device a read and write device b's memory directly?
void fill_peer_table(Table& table, const std::vector<std::vector<bool>>& matrix) {
  for (std::size_t a = 0; a < matrix.size(); ++a) {
    Table::Row& row = table.add_row().set("device", static_cast<int>(a));
    for (std::size_t b = 0; b < matrix.size(); ++b) {
      const std::string key = "to_" + std::to_string(b);
      if (a == b) row.set(key, "-");  // a device always reaches its own memory
      else row.set(key, static_cast<bool>(matrix[a][b]));
    }
  }
}

std::vector<Column> peer_columns(int device_count) {
  std::vector<Column> columns{{"device", "device"}};
  for (int b = 0; b < device_count; ++b) columns.push_back({"to_" + std::to_string(b), "to " + std::to_string(b)});
  return columns;
}

// The accounting walk-through, with the checks that make it a statement rather than a printout.
void memory_accounting(Report& report, std::size_t bytes) {
  NvtxRange range("memory accounting");
  const std::vector<AccountingStep> steps = measure_memory_accounting(bytes);
  Table table({{"step", "step"}, {"driver_free_bytes", "driver free", -1, Style::kBytes},
               {"pool_used_bytes", "pool used", -1, Style::kBytes},
               {"pool_reserved_bytes", "pool reserved", -1, Style::kBytes}});
  for (const AccountingStep& s : steps) {
    table.add_row().set("step", s.what).set("driver_free_bytes", s.driver_free).set("pool_used_bytes", s.pool_used)
        .set("pool_reserved_bytes", s.pool_reserved);
  }
  report.out() << "\n== 4. memory accounting with a " << format_bytes(bytes)
               << " buffer (driver free = cudaMemGetInfo; pool used/reserved = what\n"
                  "   memory_allocated()/memory_reserved() report for PyTorch's caching allocator)\n";
  table.print(report.out());
  report.json()["memory_accounting"] = {{"buffer_bytes", bytes}, {"steps", table.json()}};

  // Steps: 0 start, 1 cudaMalloc, 2 cudaFree, 3 pool alloc, 4 pool free, 5 pool trim. The driver's
  // free memory is shared by every process on the GPU, so each check compares two neighbouring
  // steps (microseconds apart) and asks for a change of at least half the buffer: another
  // process creating its context meanwhile rarely fakes or hides that (the ctest cases of this
  // chapter run alone for the same reason).
  auto gained = [&](int from, int to) {  // driver free memory gained from step `from` to `to`
    return static_cast<double>(steps[to].driver_free) - static_cast<double>(steps[from].driver_free);
  };
  const double half = bytes / 2.0;
  report.check(-gained(0, 1) >= half, "cudaMalloc did not take the buffer from the driver's free memory");
  report.check(gained(1, 2) >= half, "cudaFree did not give the buffer back to the driver");
  report.check(-gained(2, 3) >= half, "the pool's allocation did not take memory from the driver");
  report.check(steps[3].pool_used == bytes && steps[3].pool_reserved >= bytes,
               "the pool does not count the allocation as used and reserved");
  report.check(steps[4].pool_used == 0 && steps[4].pool_reserved >= bytes,
               "the pool did not keep the freed buffer reserved");
  report.check(gained(3, 4) < half, "the driver saw memory come back while the pool still held it");
  report.check(steps[5].pool_reserved == 0 && gained(4, 5) >= half, "trimming the pool did not return its memory");
}

struct Options {
  CommonOptions common;
  std::optional<int> only_device;  // --device N: this device alone, made current
};

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"What torch.cuda asks the CUDA runtime: availability, devices, properties, memory."};
  app.name("device_query");
  add_common_options(app, o.common, DeviceFlag::kNone);
  app.add_option_function<std::string>(
         "--device", [&o](const std::string& text) { o.only_device = parse_device(text).index; },
         "show only device N (N, cuda or cuda:N) and make it current (default: all devices)")
      ->type_name("N");
  return parse_command_line(app, argc, argv);
}

// 1. torch.cuda.is_available() and device_count(). The first CUDA call in a process loads the
//    driver; the first use of a device creates its context. PyTorch defers both until the first
//    CUDA operation (lazy initialisation). That cost is paid once per process, so it is one
//    measurement: a timing of one run, taken before anything else calls CUDA (the report's
//    provenance line asks the runtime for the GPUs, which would load the driver first).
struct FirstCall {
  GpuAvailability gpus;
  std::optional<double> init_ms;  // driver load + context creation; none without a GPU
};

FirstCall time_first_cuda_call(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  FirstCall first{probe_gpus(), std::nullopt};
  if (first.gpus.available()) {
    use_device(o.only_device.value_or(0));  // exit 2 naming the devices that exist, for a bad index
    CUDA_CHECK(cudaFree(nullptr));          // make sure the context exists before the clock stops
    first.init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  return first;
}

GpuAvailability show_runtime(Report& report, const Options& o, const FirstCall& first) {
  std::ostream& out = report.out();
  out << "== 1. the runtime: torch.cuda.is_available(), device_count(), current_device()\n";
  const GpuAvailability& gpus = first.gpus;
  const std::optional<double>& init_ms = first.init_ms;
  Table runtime({{"runtime_version", "CUDA runtime (built with)"}, {"driver_version", "CUDA driver supports"},
                 {"cuda_available", ""}, {"reason", ""}, {"device_count", "device count"},
                 {"current_device", "current device"}, {"host_cpus", "host CPU threads"},
                 {"init_ms", "", 1, Column::Style::kTiming}});
  Table::Row& facts = runtime.add_row().set("runtime_version", format_cuda_version(gpus.runtime_version));
  // The host's side of the core counts that step 2 prints for the GPU (0 where the OS does not say).
  facts.set("host_cpus", static_cast<int>(std::thread::hardware_concurrency()));
  facts.set("driver_version", gpus.driver_version ? format_cuda_version(gpus.driver_version) : "none");
  facts.set("cuda_available", gpus.available()).set("device_count", gpus.device_count);
  if (!gpus.available()) {
    facts.set("reason", gpus.reason);
    out << "CUDA available: no (" << gpus.reason << ")\n";
  } else {
    int current_device = -1;
    CUDA_CHECK(cudaGetDevice(&current_device));
    facts.set("current_device", current_device).set("init_ms", timing(summarize({*init_ms})));
    out << "CUDA available: yes\n";
  }
  runtime.print_turned(out, "");
  if (init_ms) out << format("driver load + context creation: %.1f ms (once per process: one run)\n", *init_ms);
  report.json()["device"] = gpus.available() ? query_device(o.only_device.value_or(0)).name : "CPU";
  report.json()["quick"] = o.common.quick;
  report.json()["runtime"] = runtime.json().at(0);
  report.json()["runtime"]["init_timed_first"] = true;  // before the provenance query (it loads the driver)
  return gpus;
}

// 2. get_device_properties(i) and mem_get_info(), with the peaks they imply, for every device or
//    the one asked for.
void show_devices(Report& report, const Options& o, int device_count) {
  NvtxRange range("device properties");
  std::ostream& out = report.out();
  out << "\n== 2. each device: get_device_properties(), mem_get_info(), and the peaks they imply\n";
  Table devices = device_table();
  for (int d = 0; d < device_count; ++d) {
    if (o.only_device && d != *o.only_device) continue;
    const DeviceReport r = query_device(d);
    add_device(devices, r);
    report.check(r.total_global_mem > 0 && r.free_global_mem <= r.total_global_mem,
                 "device " + std::to_string(d) + " reports more free than total memory");
  }
  devices.print_turned(out, "");
  report.json()["devices"] = devices.json();
  // The one-line why of the peaks (device_query_bench measures how close real work gets).
  out << "(each FP32 lane does one multiply-add, 2 FLOP, per clock; tensor cores multiply small matrices, dense,\n"
         " 8x (TF32) and 16x (BF16) that rate on sm_80 and sm_90, but only for matmuls)\n";
}

// 3. can_device_access_peer(a, b) for every pair.
void show_peers(Report& report, int device_count) {
  std::ostream& out = report.out();
  out << "\n== 3. peer access (torch.cuda.can_device_access_peer: can the row's device use the column's memory)\n";
  if (device_count < 2) {
    out << "one device: no pair to ask about\n";
    return;
  }
  Table peers(peer_columns(device_count));
  fill_peer_table(peers, peer_access_matrix(device_count));
  peers.print(out);
  report.json()["peer_access"] = peers.json();
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  const FirstCall first = time_first_cuda_call(o);  // before the report's provenance line calls CUDA
  Report report("device_query", o.common.json);

  // 1. The runtime; no GPU is the answer, with --device N too.
  const GpuAvailability gpus = show_runtime(report, o, first);
  if (!gpus.available()) return report.finish();

  // 2. Every device's properties, 3. which pairs reach each other.
  show_devices(report, o, gpus.device_count);
  show_peers(report, gpus.device_count);

  // 4. Memory accounting on the current device, where it has stream-ordered pools.
  const int current = o.only_device.value_or(0);
  if (query_device(current).memory_pools) {
    memory_accounting(report, o.common.quick ? std::size_t{256} << 20 : std::size_t{1} << 30);
  } else {
    report.out() << "\n== 4. memory accounting skipped: device " << current
                 << " has no stream-ordered memory pools (cudaDevAttrMemoryPoolsSupported is 0)\n";
  }
  return report.finish();
}

}  // namespace
}  // namespace workbook::device_query

int main(int argc, char** argv) {
  return workbook::guarded_main("device_query", [&] { return workbook::device_query::run(argc, argv); });
}
#endif  // WORKBOOK_LESSON_LIBRARY

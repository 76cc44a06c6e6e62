// device_query: what torch.cuda.is_available(), device_count(), get_device_properties(),
// mem_get_info(), memory_allocated() and memory_reserved() ask the CUDA runtime.
//
//   device_query                 every device, then memory accounting on device 0
//   device_query --device 1      one device (made current, as torch.cuda.set_device(1))
//   device_query --json out.json the same facts as one JSON object
//
// No GPU is an answer here, not an error: "CUDA available: no (<reason>)" and exit 0, --device N
// or not. With GPUs, a --device index that is not one of them exits 2 naming those that are.
#include "device_query.h"

#include "cli.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "report.h"

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <sstream>

namespace {

using device_query::DeviceReport;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string bytes_text(std::size_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(bytes >= kGiB ? 2 : 1);
  if (bytes >= kGiB) s << bytes / kGiB << " GiB";
  else if (bytes >= kMiB) s << bytes / kMiB << " MiB";
  else s << bytes / 1024.0 << " KiB";
  return s.str();
}

void print_device(std::ostream& out, const DeviceReport& d) {
  const double peak = device_query::peak_memory_bandwidth_gbps(d.memory_clock_khz, d.memory_bus_width_bits);
  char line[160];
  auto row = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "  %-34s %s\n", label, value.c_str());
    out << line;
  };
  auto dims = [](const std::array<int, 3>& v) {
    return std::to_string(v[0]) + " x " + std::to_string(v[1]) + " x " + std::to_string(v[2]);
  };
  auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  out << "\nDevice " << d.index << ": " << d.name << "\n";
  row("compute capability", std::to_string(d.major) + "." + std::to_string(d.minor));
  row("PCI bus id", d.pci_bus_id);
  row("multiprocessors (SMs)", std::to_string(d.multiprocessors));
  row("global memory, total", bytes_text(d.total_global_mem) + " (" + std::to_string(d.total_global_mem) + " bytes)");
  row("global memory, free now", bytes_text(d.free_global_mem));
  row("L2 cache", bytes_text(static_cast<std::size_t>(d.l2_cache_bytes)));
  row("shared memory per block", bytes_text(d.shared_mem_per_block) + " (opt-in up to " +
                                     bytes_text(d.shared_mem_per_block_optin) + ")");
  row("shared memory per SM", bytes_text(d.shared_mem_per_multiprocessor));
  row("32-bit registers per block / SM",
      std::to_string(d.registers_per_block) + " / " + std::to_string(d.registers_per_multiprocessor));
  row("warp size", std::to_string(d.warp_size));
  row("threads per block / per SM", std::to_string(d.max_threads_per_block) + " / " +
                                        std::to_string(d.max_threads_per_multiprocessor));
  row("block dimensions, max", dims(d.max_block_dim));
  row("grid dimensions, max", dims(d.max_grid_dim));
  row("copy engines", std::to_string(d.async_engine_count));
  row("SM clock, peak", std::to_string(d.sm_clock_khz / 1000) + " MHz");
  row("memory clock, peak", std::to_string(d.memory_clock_khz / 1000) + " MHz");
  row("memory bus width", std::to_string(d.memory_bus_width_bits) + " bits");
  std::snprintf(line, sizeof line, "%.0f GB/s (2 x clock x bus width)", peak);
  row("peak memory bandwidth (derived)", line);
  row("ECC enabled", yes_no(d.ecc_enabled));
  row("unified addressing", yes_no(d.unified_addressing));
  row("concurrent kernels", yes_no(d.concurrent_kernels));
  row("cooperative launch", yes_no(d.cooperative_launch));
  row("memory pools (cudaMallocAsync)", yes_no(d.memory_pools));
}

nlohmann::json device_json(const DeviceReport& d) {
  return {
      {"index", d.index},
      {"name", d.name},
      {"pci_bus_id", d.pci_bus_id},
      {"compute_capability", std::to_string(d.major) + "." + std::to_string(d.minor)},
      {"multiprocessors", d.multiprocessors},
      {"total_global_mem_bytes", d.total_global_mem},
      {"free_global_mem_bytes", d.free_global_mem},
      {"l2_cache_bytes", d.l2_cache_bytes},
      {"shared_mem_per_block_bytes", d.shared_mem_per_block},
      {"shared_mem_per_block_optin_bytes", d.shared_mem_per_block_optin},
      {"shared_mem_per_multiprocessor_bytes", d.shared_mem_per_multiprocessor},
      {"registers_per_block", d.registers_per_block},
      {"registers_per_multiprocessor", d.registers_per_multiprocessor},
      {"warp_size", d.warp_size},
      {"max_threads_per_block", d.max_threads_per_block},
      {"max_threads_per_multiprocessor", d.max_threads_per_multiprocessor},
      {"max_block_dim", d.max_block_dim},
      {"max_grid_dim", d.max_grid_dim},
      {"async_engine_count", d.async_engine_count},
      {"sm_clock_khz", d.sm_clock_khz},
      {"memory_clock_khz", d.memory_clock_khz},
      {"memory_bus_width_bits", d.memory_bus_width_bits},
      {"peak_memory_bandwidth_gbps",
       device_query::peak_memory_bandwidth_gbps(d.memory_clock_khz, d.memory_bus_width_bits)},
      {"ecc_enabled", d.ecc_enabled},
      {"unified_addressing", d.unified_addressing},
      {"concurrent_kernels", d.concurrent_kernels},
      {"cooperative_launch", d.cooperative_launch},
      {"memory_pools", d.memory_pools},
  };
}

void print_peer_matrix(std::ostream& out, const std::vector<std::vector<bool>>& m) {
  out << "\nPeer access (row reads column's memory directly; torch.cuda.can_device_access_peer):\n     ";
  for (std::size_t b = 0; b < m.size(); ++b) out << std::setw(4) << b;
  out << "\n";
  for (std::size_t a = 0; a < m.size(); ++a) {
    out << std::setw(4) << a << " ";
    for (std::size_t b = 0; b < m.size(); ++b) out << std::setw(4) << (a == b ? "-" : m[a][b] ? "yes" : "no");
    out << "\n";
  }
}

// The accounting walk-through, with the checks that make it a statement rather than a printout.
void memory_accounting(workbook::Report& report, std::size_t bytes) {
  workbook::NvtxRange range("memory accounting");
  const auto steps = device_query::measure_memory_accounting(bytes);
  std::ostream& out = report.out();
  out << "\nMemory accounting with a " << bytes_text(bytes) << " buffer (driver view = cudaMemGetInfo;"
      << "\npool used/reserved = what memory_allocated()/memory_reserved() report for PyTorch's cache):\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-32s %14s %14s %14s\n", "step", "driver free", "pool used", "pool reserved");
  out << line;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : steps) {
    std::snprintf(line, sizeof line, "  %-32s %14s %14s %14s\n", s.what.c_str(), bytes_text(s.driver_free).c_str(),
                  bytes_text(s.pool_used).c_str(), bytes_text(s.pool_reserved).c_str());
    out << line;
    rows.push_back({{"step", s.what}, {"driver_free_bytes", s.driver_free},
                    {"pool_used_bytes", s.pool_used}, {"pool_reserved_bytes", s.pool_reserved}});
  }
  report.json()["memory_accounting"] = {{"buffer_bytes", bytes}, {"steps", rows}};

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

int run(int argc, char** argv) {
  CLI::App app{"What torch.cuda asks the CUDA runtime: availability, devices, properties, memory."};
  app.name("device_query");
  workbook::CommonOptions common;
  workbook::add_common_options(app, common, workbook::DeviceFlag::kNone);
  std::optional<int> only_device;
  app.add_option_function<std::string>(
         "--device", [&only_device](const std::string& text) { only_device = workbook::parse_device(text).index; },
         "show only device N (N, cuda or cuda:N) and make it current (default: all devices)")
      ->type_name("N");
  if (auto code = workbook::parse_command_line(app, argc, argv)) return *code;

  workbook::Report report("device_query", common.json);
  std::ostream& out = report.out();
  auto& json = report.json();

  // The first CUDA call in a process loads the driver; the first use of a device creates its
  // context. PyTorch defers both until the first CUDA operation (lazy initialisation).
  const auto init_start = std::chrono::steady_clock::now();
  const workbook::GpuAvailability gpus = workbook::probe_gpus();
  json["driver_version"] = gpus.driver_version ? workbook::format_cuda_version(gpus.driver_version) : "none";
  json["runtime_version"] = workbook::format_cuda_version(gpus.runtime_version);
  json["cuda_available"] = gpus.available();
  json["device_count"] = gpus.device_count;

  out << "CUDA runtime (built with)         " << workbook::format_cuda_version(gpus.runtime_version) << "\n";
  out << "CUDA driver supports              "
      << (gpus.driver_version ? workbook::format_cuda_version(gpus.driver_version) : "no driver installed") << "\n";
  if (!gpus.available()) {
    json["reason"] = gpus.reason;
    out << "CUDA available: no (" << gpus.reason << ")\n";
    return report.finish();  // with --device N too: no GPU is this program's answer, not an error
  }

  const int current = only_device.value_or(0);
  workbook::use_device(current);  // exit 2 naming the devices that exist, for a bad index
  CUDA_CHECK(cudaFree(nullptr));  // make sure the context exists before the clock stops
  const double init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - init_start).count();
  int current_device = -1;
  CUDA_CHECK(cudaGetDevice(&current_device));
  json["current_device"] = current_device;
  json["init_ms"] = init_ms;

  out << "CUDA available: yes\n";
  out << "device count                      " << gpus.device_count << "\n";
  out << "current device                    " << current_device << "\n";
  char init_line[80];
  std::snprintf(init_line, sizeof init_line, "driver load + context creation    %.1f ms\n", init_ms);
  out << init_line;

  nlohmann::json devices = nlohmann::json::array();
  {
    workbook::NvtxRange range("device properties");
    for (int d = 0; d < gpus.device_count; ++d) {
      if (only_device && d != *only_device) continue;
      const DeviceReport r = device_query::query_device(d);
      print_device(out, r);
      devices.push_back(device_json(r));
      report.check(r.total_global_mem > 0 && r.free_global_mem <= r.total_global_mem,
                   "device " + std::to_string(d) + " reports more free than total memory");
    }
  }
  json["devices"] = devices;

  if (gpus.device_count >= 2) {
    const auto matrix = device_query::peer_access_matrix(gpus.device_count);
    print_peer_matrix(out, matrix);
    json["peer_access"] = matrix;
  }

  if (device_query::query_device(current).memory_pools) {
    memory_accounting(report, common.quick ? std::size_t{256} << 20 : std::size_t{1} << 30);
  } else {
    out << "\nMemory accounting skipped: device " << current
        << " has no stream-ordered memory pools (cudaDevAttrMemoryPoolsSupported is 0)\n";
  }
  return report.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("device_query", [&] { return run(argc, argv); });
}

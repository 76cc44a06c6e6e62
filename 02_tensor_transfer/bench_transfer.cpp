// bench_transfer.cpp: chapter 02's measuring harness, beside the lesson (tensor_transfer.cu), whose
// generators, round-trip check and copy timer it links. What the lesson leaves out:
//
//   tensor_transfer_bench                   # copies of 4 KiB .. 1 GiB, every kind of host memory, every
//                                           # size verified; what page-locking costs; the random tensor
//   tensor_transfer_bench --quick           # copies up to 64 MiB (what the tests and compute-sanitizer run)
//   tensor_transfer_bench --json out.json   # what plot_transfer.py draws (pytorch_transfer.py writes the
//                                           # same fields)
//
// Every size is checked (a round trip through both device buffers, compared with its source)
// before it is timed, as in the lesson.
#include "bandwidth.h"
#include "host_memory.h"
#include "tensor_transfer.h"

#include "cli.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "event_timer.h"
#include "format.h"
#include "gpu_memory.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "report.h"
#include "stats.h"
#include "stream.h"
#include "table.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace workbook::transfer {
namespace {

struct Options {
  workbook::CommonOptions common;
  int max_mib = 1024;     // largest copy; --quick: 64
  int repeats = 20;       // timed repeats of a small copy (large copies get fewer)
  int random_mib = 256;   // size of the random tensor; --quick: 16
};

// ---------------------------------------------------------------------------------------------
// The random tensor: the lesson's check and timing, once more, for the plot's 10x target.

void measure_random_tensor(Report& report, const Options& o, cudaStream_t stream) {
  workbook::NvtxRange range("random tensor");
  const std::size_t bytes = static_cast<std::size_t>(o.random_mib) * kMiB;
  report.out() << "== a " << workbook::format_bytes(bytes) << " Normal(0, 1) float32 tensor: made on the host "
               << "and copied, or made on the GPU\n";
  RandomTensor t(bytes, o.common.device, stream);
  if (!check_random_tensor(t, report)) return;
  const RandomTensorTimes r = time_random_tensor(t, o.common.quick ? 2 : 3);
  report.out() << format("   host: generate on one core, then copy   %10.3f ms  (min %.3f, max %.3f)\n",
                         r.host_then_copy.median, r.host_then_copy.min, r.host_then_copy.max)
               << format("   GPU:  cuRAND in GPU memory               %10.3f ms  "
                         "(GPU time %.3f ms: %.0f GB/s written)\n", r.on_gpu.median, r.on_gpu_gpu_time.median,
                         workbook::gigabytes_per_second(static_cast<double>(bytes), r.on_gpu_gpu_time.median))
               << format("   made on the GPU: %.0fx faster (the chapter's target: at least 10x)\n", r.speedup());
  report.json()["random_tensor"] = {{"bytes", bytes},
                                    {"host_then_copy_ms", workbook::timing(r.host_then_copy)},
                                    {"on_gpu_ms", workbook::timing(r.on_gpu)},
                                    {"on_gpu_gpu_time_ms", workbook::timing(r.on_gpu_gpu_time)},
                                    {"speedup", r.speedup()}};
}

// ---------------------------------------------------------------------------------------------
// Copy bandwidth for each kind of host memory over every size, each size checked, then timed.

struct CopyRow {
  std::string kind;       // pageable, pinned, registered, or device for D2D
  std::string direction;  // h2d, d2h, d2d
  std::size_t bytes;
  Stats t;
  bool verified;
  double gbps() const { return workbook::gigabytes_per_second(static_cast<double>(bytes), t.median); }
};

const CopyRow* find_row(const std::vector<CopyRow>& rows, const std::string& kind, const std::string& direction,
                        std::size_t bytes) {
  for (const CopyRow& r : rows) {
    if (r.kind == kind && r.direction == direction && r.bytes == bytes) return &r;
  }
  return nullptr;
}

// One kind over every size: the lesson's round trip (the check), then each direction timed; D2D
// only with `d2d` (it does not depend on the host memory, so one kind measures it).
enum class DeviceCopy { kSkip, kTime };

void sweep_kind(HostMemory kind, const std::vector<std::size_t>& sizes, std::byte* d_a, std::byte* d_b,
                cudaStream_t stream, int base_repeats, DeviceCopy d2d, std::vector<CopyRow>& rows) {
  workbook::NvtxRange range(host_memory_name(kind));
  const std::string name = host_memory_name(kind);
  HostBuffer src(sizes.back(), kind), dst(sizes.back(), kind);
  for (const std::size_t bytes : sizes) {
    fill_pattern(src.data(), bytes, bytes * 4 + static_cast<std::size_t>(kind));
    const bool verified = round_trip_exact(src, dst, bytes, d_a, d_b, stream);
    const workbook::Repeats repeats = repeats_for(bytes, base_repeats);
    const Stats h2d = time_copy(d_a, src.data(), bytes, cudaMemcpyHostToDevice, stream, repeats);
    const Stats d2h = time_copy(dst.data(), d_b, bytes, cudaMemcpyDeviceToHost, stream, repeats);
    rows.push_back({name, "h2d", bytes, h2d, verified});
    rows.push_back({name, "d2h", bytes, d2h, verified});
    if (d2d == DeviceCopy::kTime) {
      const Stats d2d_time = time_copy(d_b, d_a, bytes, cudaMemcpyDeviceToDevice, stream, repeats);
      rows.push_back({"device", "d2d", bytes, d2d_time, verified});
    }
  }
}

std::vector<CopyRow> measure_bandwidth(Report& report, const Options& o, cudaStream_t stream) {
  const std::size_t max_bytes = static_cast<std::size_t>(o.max_mib) * kMiB;
  const std::vector<std::size_t> sizes = transfer_sizes(4 * kKiB, max_bytes);
  workbook::DeviceBuffer<std::byte> d_a(max_bytes), d_b(max_bytes);
  std::vector<CopyRow> rows;
  for (const HostMemory kind : kAllHostMemoryKinds) {
    sweep_kind(kind, sizes, d_a.data(), d_b.data(), stream, o.repeats,
               kind == HostMemory::kPinned ? DeviceCopy::kTime : DeviceCopy::kSkip, rows);
  }

  Table table({{"size", "size"}, {"pageable/h2d", "pageable H2D", 2}, {"pageable/d2h", "D2H", 2},
               {"pinned/h2d", "pinned H2D", 2}, {"pinned/d2h", "D2H", 2}, {"registered/h2d", "registered H2D", 2},
               {"registered/d2h", "D2H", 2}, {"device/d2d", "D2D", 1}, {"check", "check"}});
  for (const std::size_t bytes : sizes) {
    Table::Row& line = table.add_row().set("size", workbook::format_bytes(bytes));
    bool verified = true;
    for (const CopyRow& r : rows) {
      if (r.bytes != bytes) continue;
      line.set(r.kind + "/" + r.direction, r.gbps());
      verified = verified && r.verified;
    }
    line.set("check", verified ? "ok" : "MISMATCH");
    report.check(verified, "copies of " + workbook::format_bytes(bytes) + " did not reproduce the source");
  }
  report.out() << "== copy bandwidth in GB/s (1e9 bytes/s), median of repeats after warm-up; every size verified\n";
  table.print(report.out(), "   ");
  report.out() << "   (D2D moves each byte twice through GPU memory, read and write: its DRAM traffic is 2x the "
                  "figure)\n";

  nlohmann::json json_rows = nlohmann::json::array();
  for (const CopyRow& r : rows) {
    nlohmann::json j;
    j["time_ms"] = workbook::timing(r.t);
    j["kind"] = r.kind;
    j["direction"] = r.direction;
    j["bytes"] = r.bytes;
    j["gbps"] = r.gbps();
    j["verified"] = r.verified;
    if (r.direction == "d2d") j["dram_gbps"] = 2.0 * r.gbps();  // each byte is read once and written once
    json_rows.push_back(j);
  }
  report.json()["bandwidth"] = json_rows;
  report.json()["bandwidth_all_verified"] =
      std::all_of(rows.begin(), rows.end(), [](const CopyRow& r) { return r.verified; });
  return rows;
}

// The chapter's first target: pinned copies of 256 MiB reach at least 90% of the best rate seen.
void summarize_headline(Report& report, const std::vector<CopyRow>& rows) {
  nlohmann::json headline = nlohmann::json::object();
  for (const std::string direction : {"h2d", "d2h"}) {
    const CopyRow* best = nullptr;
    for (const CopyRow& r : rows) {
      if (r.direction == direction && (best == nullptr || r.gbps() > best->gbps())) best = &r;
    }
    const CopyRow* pinned = find_row(rows, "pinned", direction, 256 * kMiB);
    if (best == nullptr || pinned == nullptr) continue;  // --max-mib below 256
    const double fraction = pinned->gbps() / best->gbps();
    report.out() << format("   pinned %s at 256 MiB: %.2f GB/s = %.1f%% of the best %s rate measured "
                           "(%.2f GB/s, %s, %s)\n",
                           direction == "h2d" ? "H2D" : "D2H", pinned->gbps(), 100.0 * fraction, direction.c_str(),
                           best->gbps(), best->kind.c_str(), workbook::format_bytes(best->bytes).c_str());
    headline["pinned_" + direction + "_256mib_gbps"] = pinned->gbps();
    headline["best_" + direction + "_gbps"] = best->gbps();
    headline["pinned_" + direction + "_fraction_of_best"] = fraction;
  }
  report.json()["headline"] = headline;
}

// ---------------------------------------------------------------------------------------------
// What page-locking costs, and after how many copies it pays.

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Acquiring and releasing host memory of one kind, each timed on the host clock.
struct AllocationCost {
  Stats acquire;
  Stats release;
  double total_ms() const { return acquire.median + release.median; }
};

AllocationCost time_allocation(int repeats, std::size_t bytes, HostMemory kind) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> acquire, release;
  for (int i = 0; i < repeats; ++i) {
    if (kind == HostMemory::kPinned) {
      void* p = nullptr;
      auto start = Clock::now();
      CUDA_CHECK(cudaMallocHost(&p, bytes));  // allocates, maps and page-locks every page
      acquire.push_back(milliseconds_since(start));
      start = Clock::now();
      CUDA_CHECK(cudaFreeHost(p));
      release.push_back(milliseconds_since(start));
      continue;
    }
    void* p = std::malloc(bytes);  // a fresh mapping: no page of it exists yet
    if (p == nullptr) throw std::bad_alloc();
    auto start = Clock::now();
    std::memset(p, 0, bytes);  // first touch: the kernel supplies each page on a fault
    const double touch_ms = milliseconds_since(start);
    if (kind == HostMemory::kPageable) {
      acquire.push_back(touch_ms);
    } else {  // memory you already have and use, page-locked in place
      start = Clock::now();
      const cudaError_t status = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
      acquire.push_back(milliseconds_since(start));
      if (status != cudaSuccess) std::free(p);
      CUDA_CHECK(status);
      start = Clock::now();
      CUDA_CHECK(cudaHostUnregister(p));
      release.push_back(milliseconds_since(start));
    }
    start = Clock::now();
    std::free(p);
    if (kind == HostMemory::kPageable) release.push_back(milliseconds_since(start));
  }
  return {workbook::summarize(acquire), workbook::summarize(release)};
}

void measure_pinning_cost(Report& report, const Options& o, const std::vector<CopyRow>& rows) {
  workbook::NvtxRange range("pinning cost");
  const std::size_t bytes = std::min<std::size_t>(256 * kMiB, static_cast<std::size_t>(o.max_mib) * kMiB);
  const int repeats = o.common.quick ? 2 : 3;
  const AllocationCost touch = time_allocation(repeats, bytes, HostMemory::kPageable);
  const AllocationCost pin = time_allocation(repeats, bytes, HostMemory::kPinned);
  const AllocationCost reg = time_allocation(repeats, bytes, HostMemory::kRegistered);
  const double pageable_ms = find_row(rows, "pageable", "h2d", bytes)->t.median;
  const double pinned_ms = find_row(rows, "pinned", "h2d", bytes)->t.median;
  const double registered_ms = find_row(rows, "registered", "h2d", bytes)->t.median;
  // cudaMallocHost replaces an allocation you would make anyway: its cost is what its whole life
  // (allocate + free) adds to malloc + first touch + free. cudaHostRegister (+ unregister) is
  // pure extra cost on memory you already have.
  const auto pin_copies = break_even_copies(pin.total_ms() - touch.total_ms(), pageable_ms, pinned_ms);
  const auto reg_copies = break_even_copies(reg.total_ms(), pageable_ms, registered_ms);
  auto copies_text = [](const std::optional<long>& c) { return c ? std::to_string(*c) : std::string("never"); };
  auto per_gib = [bytes](const Stats& t) { return ms_per_gib(t.median, bytes); };

  Table table({{"allocation", "ms per GiB"}, {"acquire", "acquire", 1}, {"release", "release", 1}});
  table.add_row().set("allocation", "malloc + first touch, free (pageable)").set("acquire", per_gib(touch.acquire))
      .set("release", per_gib(touch.release));
  table.add_row().set("allocation", "cudaMallocHost, cudaFreeHost (pinned)").set("acquire", per_gib(pin.acquire))
      .set("release", per_gib(pin.release));
  table.add_row().set("allocation", "cudaHostRegister, cudaHostUnregister").set("acquire", per_gib(reg.acquire))
      .set("release", per_gib(reg.release));
  std::ostream& out = report.out();
  out << "== the cost of page-locking " << workbook::format_bytes(bytes) << " (" << workbook::median_of(repeats, "run", "runs") << ")\n";
  table.print(out, "   ");
  out << format("   one H2D copy of %s: pageable %.2f ms, pinned %.2f ms, registered %.2f ms\n",
                workbook::format_bytes(bytes).c_str(), pageable_ms, pinned_ms, registered_ms);
  out << format("   break-even: cudaMallocHost instead of malloc pays after %s copies, cudaHostRegister after %s\n",
                copies_text(pin_copies).c_str(), copies_text(reg_copies).c_str());
  nlohmann::json j = {{"bytes", bytes},
                      {"malloc_touch_ms", workbook::timing(touch.acquire)},
                      {"malloc_host_ms", workbook::timing(pin.acquire)},
                      {"host_register_ms", workbook::timing(reg.acquire)},
                      {"malloc_touch_ms_per_gib", per_gib(touch.acquire)},
                      {"malloc_host_ms_per_gib", per_gib(pin.acquire)},
                      {"host_register_ms_per_gib", per_gib(reg.acquire)},
                      {"free_release_ms_per_gib", per_gib(touch.release)},
                      {"free_host_release_ms_per_gib", per_gib(pin.release)},
                      {"host_unregister_release_ms_per_gib", per_gib(reg.release)}};
  j["break_even_copies_malloc_host"] = pin_copies ? nlohmann::json(*pin_copies) : nlohmann::json(nullptr);
  j["break_even_copies_host_register"] = reg_copies ? nlohmann::json(*reg_copies) : nlohmann::json(nullptr);
  report.json()["pinning"] = j;
}

// ---------------------------------------------------------------------------------------------

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 02's bench: H2D/D2H/D2D bandwidth from 4 KiB to --max-mib for pageable, pinned and "
               "registered host memory, the cost of pinning, and the random tensor made on the host vs the GPU"};
  workbook::add_common_options(app, o.common);
  workbook::add_size_option(app, "--max-mib", o.max_mib,
                            "largest copy in MiB, a power of two (default 1024; --quick: 64)");
  app.add_option("--repeats", o.repeats, "timed repeats of a small copy; large copies get fewer (default 20)");
  workbook::add_size_option(app, "--random-mib", o.random_mib,
                            "size of the random tensor in MiB (default 256; --quick: 16)");
  if (auto code = workbook::parse_command_line(app, argc, argv)) return code;
  if (o.common.quick) {  // --quick sets smaller defaults, explicit flags still win
    if (app.count("--max-mib") == 0) o.max_mib = 64;
    if (app.count("--random-mib") == 0) o.random_mib = 16;
    if (app.count("--repeats") == 0) o.repeats = 5;
  }
  workbook::require_at_least("--max-mib", o.max_mib, 1);
  workbook::require_at_most("--max-mib", o.max_mib, 1024);
  if (!is_power_of_two(static_cast<std::size_t>(o.max_mib))) {
    throw workbook::UsageError("--max-mib must be a power of two, got " + std::to_string(o.max_mib));
  }
  workbook::require_at_least("--repeats", o.repeats, 1);
  workbook::require_at_least("--random-mib", o.random_mib, 1);
  workbook::require_at_most("--random-mib", o.random_mib, 4096);
  return std::nullopt;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  workbook::use_device(o.common.device);  // exit 77 without a GPU, 2 naming the devices for a bad index
  // The random tensor and the two copy buffers are never held at once: each must fit on its own.
  workbook::require_gpu_memory("--random-mib " + std::to_string(o.random_mib),
                               workbook::ByteCount().add(o.random_mib, kMiB));
  workbook::require_gpu_memory("--max-mib " + std::to_string(o.max_mib), workbook::ByteCount().add(o.max_mib, kMiB, 2));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, o.common.device));
  Report report("tensor_transfer_bench", o.common.json);
  report.out() << "device " << o.common.device << ": " << prop.name << (o.common.quick ? " (--quick)" : "") << "\n";
  report.json()["device"] = prop.name;
  report.json()["quick"] = o.common.quick;
  report.json()["max_mib"] = o.max_mib;
  report.json()["repeats"] = o.repeats;
  report.json()["random_mib"] = o.random_mib;

  workbook::Stream stream;
  measure_random_tensor(report, o, stream.get());
  const std::vector<CopyRow> rows = measure_bandwidth(report, o, stream.get());
  summarize_headline(report, rows);
  measure_pinning_cost(report, o, rows);
  return report.finish();
}

}  // namespace
}  // namespace workbook::transfer

int main(int argc, char** argv) {
  return workbook::guarded_main("tensor_transfer_bench", [&] { return workbook::transfer::run(argc, argv); });
}

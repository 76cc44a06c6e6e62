// main.cpp: where a tensor lives, and what moving it costs.
//
//   tensor_transfer                 full run: copies of 4 KiB .. 1 GiB (well under a minute on an H200)
//   tensor_transfer --quick         copies up to 64 MiB (what the tests and compute-sanitizer run)
//   tensor_transfer --json out.json the same facts as one JSON object (pytorch_transfer.py writes
//                                   the same fields; plot_transfer.py draws both)
//
// Phases, in order: (1) the tensor type: metadata on the host, elements on the device, bit-exact
// round trips; (2) a random tensor made on the host and copied vs made on the GPU; (3) copy
// bandwidth H2D / D2H / D2D for pageable, pinned and registered host memory, every size verified;
// (4) what page-locking costs and when it pays; (5) what non_blocking means; (6) cudaMemGetInfo
// around the allocations.
#include "bandwidth.h"
#include "host_memory.h"
#include "tensor.h"
#include "tensor_transfer.cuh"

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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {

using transfer::HostBuffer;
using transfer::HostMemory;
using transfer::kGiB;
using transfer::kKiB;
using transfer::kMiB;
using workbook::Report;
using workbook::Stats;

struct Options {
  workbook::CommonOptions common;
  int max_mib = 1024;      // largest copy; --quick: 64
  int repeats = 20;        // timed repeats of a small copy (large copies get fewer)
  int random_mib = 256;    // size of the random tensor; --quick: 16
  double spin_ms = 20.0;   // how long the GPU is kept busy in the non_blocking demo
};

using workbook::format;

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json stats_json(const Stats& t) {
  return {{"median_ms", t.median}, {"min_ms", t.min}, {"max_ms", t.max}, {"repeats", t.count}};
}

// ---------------------------------------------------------------------------------------------
// (1) The tensor type: what lives on the host, what on the GPU, and round trips.

bool bytes_equal(const transfer::Tensor& a, const transfer::Tensor& b) {
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

void show_tensor_semantics(Report& report, int gpu) {
  workbook::NvtxRange range("tensor semantics");
  using transfer::Device;
  using transfer::DType;
  using transfer::Tensor;
  std::ostream& out = report.out();
  out << "== (1) a tensor: metadata on the host, elements where the device says\n";

  Tensor x = Tensor::empty({3, 1000, 257}, DType::kFloat32, Device::cpu());
  transfer::fill_pattern(static_cast<std::byte*>(x.data_ptr()), x.nbytes(), 1);
  Tensor g = x.cuda(gpu);  // cudaMalloc on `gpu`, then cudaMemcpy host -> device
  Tensor same = g.to(Device::cuda(gpu));
  Tensor back = g.cpu();
  Tensor pinned = x.pin_memory();
  Tensor back_from_pinned = pinned.cuda(gpu).cpu();

  out << format("   x = empty(%s, %s): device %s, get_device() %d, %zu bytes of pageable host memory\n",
                transfer::shape_str(x.shape()).c_str(), transfer::dtype_name(x.dtype()), x.device().str().c_str(),
                x.get_device(), x.nbytes());
  out << format("   g = x.cuda(%d): device %s, get_device() %d; its shape and dtype are read from host memory\n",
                gpu, g.device().str().c_str(), g.get_device());
  out << format("   g.to(cuda:%d) shares g's storage (no copy): %s\n", gpu, same.shares_storage_with(g) ? "yes" : "no");
  const bool exact = bytes_equal(back, x);
  const bool exact_pinned = bytes_equal(back_from_pinned, x) && pinned.is_pinned();
  out << format("   g.cpu() equals x bit for bit: %s; through x.pin_memory(): %s\n", exact ? "yes" : "NO",
                exact_pinned ? "yes" : "NO");

  // Boundary sizes: empty, one byte, around one page, and an odd size of several pages.
  bool boundaries_exact = true;
  for (const std::int64_t n : {0, 1, 4095, 4096, 4097, 1000003}) {
    Tensor h = Tensor::empty({n}, DType::kUInt8, Device::cpu());
    transfer::fill_pattern(static_cast<std::byte*>(h.data_ptr()), h.nbytes(), static_cast<std::uint64_t>(n));
    boundaries_exact = boundaries_exact && bytes_equal(h.cuda(gpu).cpu(), h);
  }
  out << format("   round trips of 0, 1, 4095, 4096, 4097 and 1000003 bytes bit-exact: %s\n",
                boundaries_exact ? "yes" : "NO");

  report.check(x.get_device() == -1 && g.get_device() == gpu && back.get_device() == -1,
               "get_device() is not -1 on the host and the GPU index on the GPU");
  report.check(same.shares_storage_with(g), "to() onto the same device copied");
  report.check(exact && exact_pinned && boundaries_exact, "a tensor round trip host -> GPU -> host changed bytes");
  report.json()["tensor"] = {{"host_get_device", x.get_device()},
                             {"cuda_get_device", g.get_device()},
                             {"same_device_to_shares_storage", same.shares_storage_with(g)},
                             {"round_trips_bit_exact", exact && exact_pinned && boundaries_exact}};
}

// ---------------------------------------------------------------------------------------------
// (2) torch.randn(n).to('cuda') vs torch.randn(n, device='cuda').

void check_normal(Report& report, const char* what, const transfer::MeanStd& m, std::size_t n) {
  // Six standard errors: the sample mean has sd 1/sqrt(n), the sample sd about 1/sqrt(2n).
  const double tolerance = 6.0 / std::sqrt(static_cast<double>(n));
  const bool ok = std::fabs(m.mean) <= tolerance && std::fabs(m.std - 1.0) <= tolerance;
  report.out() << format("   check %-32s mean %+.5f, std %.5f (tolerance %.5f): %s\n", what, m.mean, m.std,
                         tolerance, ok ? "ok" : "FAILED");
  report.check(ok, std::string(what) + " are not Normal(0, 1)");
}

void measure_random_tensor(Report& report, const Options& o, int gpu, cudaStream_t stream) {
  workbook::NvtxRange range("random tensor");
  using transfer::Device;
  using transfer::DType;
  using transfer::Tensor;
  std::ostream& out = report.out();
  const std::size_t bytes = static_cast<std::size_t>(o.random_mib) * kMiB;
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  out << "== (2) a " << workbook::format_bytes(bytes) << " Normal(0, 1) float32 tensor: made on the host "
      << "and copied, or made on the GPU\n";

  Tensor host = Tensor::empty({n}, DType::kFloat32, Device::cpu());  // pageable, as torch.randn(n)
  Tensor dev = Tensor::empty({n}, DType::kFloat32, Device::cuda(gpu));
  float* host_data = static_cast<float*>(host.data_ptr());
  float* dev_data = static_cast<float*>(dev.data_ptr());
  transfer::DeviceNormalGenerator generator(42, stream);

  // Reference and check first: the host numbers, copied over and back bit-exact; the GPU numbers
  // copied back and tested by their mean and standard deviation.
  transfer::fill_normal_cpu(host_data, static_cast<std::size_t>(n), 42);
  dev.copy_(host);
  report.check(bytes_equal(dev.cpu(), host), "the host-made random tensor changed on its way to the GPU and back");
  check_normal(report, "host-made numbers (xoshiro256+):", transfer::mean_std_cpu(host_data, static_cast<std::size_t>(n)),
               static_cast<std::size_t>(n));
  generator.fill(dev_data, static_cast<std::size_t>(n));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const Tensor from_gpu = dev.cpu();
  check_normal(report, "GPU-made numbers (cuRAND Philox):",
               transfer::mean_std_cpu(static_cast<const float*>(from_gpu.data_ptr()), static_cast<std::size_t>(n)),
               static_cast<std::size_t>(n));

  // Then time: both with the host clock, from the call until the numbers are in GPU memory.
  const Stats on_host = workbook::time_on_host({1, o.common.quick ? 2 : 3}, [&] {
    transfer::fill_normal_cpu(host_data, static_cast<std::size_t>(n), 7);
    dev.copy_(host);  // pageable -> device, synchronous, as .to('cuda') from a plain tensor
  });
  const Stats on_device = workbook::time_on_host({2, 10}, [&] {
    generator.fill(dev_data, static_cast<std::size_t>(n));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  });
  const Stats on_device_gpu =
      workbook::time_on_stream(stream, {2, 10}, [&] { generator.fill(dev_data, static_cast<std::size_t>(n)); });
  const double speedup = on_host.median / on_device.median;
  out << format("   host: generate on one core, then copy   %10.3f ms  (min %.3f, max %.3f)\n", on_host.median,
                on_host.min, on_host.max);
  out << format("   GPU:  cuRAND in GPU memory               %10.3f ms  (GPU time %.3f ms: %.0f GB/s written)\n",
                on_device.median, on_device_gpu.median, workbook::gigabytes_per_second(bytes, on_device_gpu.median));
  out << format("   made on the GPU: %.0fx faster (the chapter's target: at least 10x)\n", speedup);
  report.json()["random_tensor"] = {{"bytes", bytes},
                                    {"host_then_copy", stats_json(on_host)},
                                    {"device", stats_json(on_device)},
                                    {"device_gpu_time", stats_json(on_device_gpu)},
                                    {"speedup", speedup}};
}

// ---------------------------------------------------------------------------------------------
// (3) Copy bandwidth for each kind of host memory, every size verified.

struct Row {
  std::string kind;       // pageable, pinned, registered, or device for D2D
  std::string direction;  // h2d, d2h, d2d
  std::size_t bytes;
  Stats t;
  bool verified;
  double gbps() const { return workbook::gigabytes_per_second(static_cast<double>(bytes), t.median); }
};

// For every size: host src -> d_a (H2D, timed), d_a -> d_b (D2D, timed when `time_d2d`),
// d_b -> host dst (D2H, timed), then dst must equal src. Buffers are poisoned first, so a copy
// that did not happen cannot pass.
void measure_kind(HostMemory kind, const std::vector<std::size_t>& sizes, std::byte* d_a, std::byte* d_b,
                  cudaStream_t stream, int base_repeats, bool time_d2d, std::vector<Row>& rows) {
  workbook::NvtxRange range(transfer::host_memory_name(kind));
  const std::string name = transfer::host_memory_name(kind);
  HostBuffer src(sizes.back(), kind);
  HostBuffer dst(sizes.back(), kind);
  for (const std::size_t bytes : sizes) {
    transfer::fill_pattern(src.data(), bytes, bytes * 4 + static_cast<std::size_t>(kind));
    std::memset(dst.data(), 0xA5, bytes);
    CUDA_CHECK(cudaMemsetAsync(d_a, 0x5A, bytes, stream));
    CUDA_CHECK(cudaMemsetAsync(d_b, 0x5A, bytes, stream));
    const workbook::Repeats repeats = transfer::repeats_for(bytes, base_repeats);

    const Stats h2d = workbook::time_on_stream(stream, repeats, [&] {
      CUDA_CHECK(cudaMemcpyAsync(d_a, src.data(), bytes, cudaMemcpyHostToDevice, stream));
    });
    Stats d2d;
    auto copy_d2d = [&] { CUDA_CHECK(cudaMemcpyAsync(d_b, d_a, bytes, cudaMemcpyDeviceToDevice, stream)); };
    if (time_d2d) {
      d2d = workbook::time_on_stream(stream, repeats, copy_d2d);
    } else {
      copy_d2d();
    }
    const Stats d2h = workbook::time_on_stream(stream, repeats, [&] {
      CUDA_CHECK(cudaMemcpyAsync(dst.data(), d_b, bytes, cudaMemcpyDeviceToHost, stream));
    });
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool verified = std::memcmp(dst.data(), src.data(), bytes) == 0;

    rows.push_back({name, "h2d", bytes, h2d, verified});
    rows.push_back({name, "d2h", bytes, d2h, verified});
    if (time_d2d) rows.push_back({"device", "d2d", bytes, d2d, verified});
  }
}

const Row* find_row(const std::vector<Row>& rows, const std::string& kind, const std::string& direction,
                    std::size_t bytes) {
  for (const Row& r : rows) {
    if (r.kind == kind && r.direction == direction && r.bytes == bytes) return &r;
  }
  return nullptr;
}

std::vector<Row> measure_bandwidth(Report& report, const Options& o, std::byte* d_a, std::byte* d_b,
                                   cudaStream_t stream) {
  std::ostream& out = report.out();
  const std::vector<std::size_t> sizes = transfer::transfer_sizes(4 * kKiB, static_cast<std::size_t>(o.max_mib) * kMiB);
  std::vector<Row> rows;
  for (const HostMemory kind : transfer::kAllHostMemoryKinds) {
    measure_kind(kind, sizes, d_a, d_b, stream, o.repeats, kind == HostMemory::kPinned, rows);
  }

  out << "== (3) copy bandwidth in GB/s (1e9 bytes/s), median of repeats after warm-up; every size verified\n";
  out << format("   %8s | %8s %8s | %8s %8s | %10s %8s | %8s | %s\n", "size", "pageable", "", "pinned", "",
                "registered", "", "D2D", "check");
  out << format("   %8s | %8s %8s | %8s %8s | %10s %8s | %8s |\n", "", "H2D", "D2H", "H2D", "D2H", "H2D", "D2H", "");
  nlohmann::json json_rows = nlohmann::json::array();
  bool all_verified = true;
  for (const std::size_t bytes : sizes) {
    auto rate = [&](const char* kind, const char* direction) {
      const Row* r = find_row(rows, kind, direction, bytes);
      return r ? r->gbps() : 0.0;
    };
    bool verified = true;
    for (const Row& r : rows) verified = verified && (r.bytes != bytes || r.verified);
    all_verified = all_verified && verified;
    out << format("   %8s | %8.2f %8.2f | %8.2f %8.2f | %10.2f %8.2f | %8.1f | %s\n", workbook::format_bytes(bytes).c_str(),
                  rate("pageable", "h2d"), rate("pageable", "d2h"), rate("pinned", "h2d"), rate("pinned", "d2h"),
                  rate("registered", "h2d"), rate("registered", "d2h"), rate("device", "d2d"),
                  verified ? "ok" : "MISMATCH");
    if (!verified) report.check(false, "copies of " + workbook::format_bytes(bytes) + " did not reproduce the source");
  }
  for (const Row& r : rows) {
    nlohmann::json j = stats_json(r.t);
    j["kind"] = r.kind;
    j["direction"] = r.direction;
    j["bytes"] = r.bytes;
    j["gbps"] = r.gbps();
    j["verified"] = r.verified;
    if (r.direction == "d2d") j["dram_gbps"] = 2.0 * r.gbps();  // each byte is read once and written once
    json_rows.push_back(j);
  }
  report.json()["bandwidth"] = json_rows;
  report.json()["bandwidth_all_verified"] = all_verified;
  out << "   (D2D moves each byte twice through GPU memory, read and write: its DRAM traffic is 2x the figure)\n";
  return rows;
}

// The chapter's first target: pinned copies of 256 MiB reach at least 90% of the best rate seen.
void summarize_headline(Report& report, const std::vector<Row>& rows) {
  const std::size_t headline_bytes = 256 * kMiB;
  nlohmann::json headline = nlohmann::json::object();
  for (const char* direction : {"h2d", "d2h"}) {
    const Row* best = nullptr;
    for (const Row& r : rows) {
      if (r.direction == direction && (best == nullptr || r.gbps() > best->gbps())) best = &r;
    }
    const Row* pinned = find_row(rows, "pinned", direction, headline_bytes);
    if (best == nullptr || pinned == nullptr) continue;  // --max-mib below 256
    const double fraction = pinned->gbps() / best->gbps();
    report.out() << format("   pinned %s at 256 MiB: %.2f GB/s = %.1f%% of the best %s rate measured (%.2f GB/s, %s, %s)\n",
                           std::strcmp(direction, "h2d") == 0 ? "H2D" : "D2H", pinned->gbps(), 100.0 * fraction,
                           direction, best->gbps(), best->kind.c_str(), workbook::format_bytes(best->bytes).c_str());
    headline[std::string("pinned_") + direction + "_256mib_gbps"] = pinned->gbps();
    headline[std::string("best_") + direction + "_gbps"] = best->gbps();
    headline[std::string("pinned_") + direction + "_fraction_of_best"] = fraction;
  }
  report.json()["headline"] = headline;
}

// ---------------------------------------------------------------------------------------------
// (4) What page-locking costs, and after how many copies it pays.

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

void measure_pinning_cost(Report& report, const Options& o, const std::vector<Row>& rows) {
  workbook::NvtxRange range("pinning cost");
  std::ostream& out = report.out();
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
  const auto pin_copies = transfer::break_even_copies(pin.total_ms() - touch.total_ms(), pageable_ms, pinned_ms);
  const auto reg_copies = transfer::break_even_copies(reg.total_ms(), pageable_ms, registered_ms);
  auto copies_text = [](const std::optional<long>& c) { return c ? std::to_string(*c) : std::string("never"); };
  auto per_gib = [bytes](const Stats& t) { return transfer::ms_per_gib(t.median, bytes); };

  out << "== (4) the cost of page-locking " << workbook::format_bytes(bytes) << " (median of " << repeats
      << "), in ms per GiB\n";
  out << format("   %-40s %8s %8s\n", "", "acquire", "release");
  out << format("   %-40s %8.1f %8.1f\n", "malloc + first touch, free (pageable)", per_gib(touch.acquire),
                per_gib(touch.release));
  out << format("   %-40s %8.1f %8.1f\n", "cudaMallocHost, cudaFreeHost (pinned)", per_gib(pin.acquire),
                per_gib(pin.release));
  out << format("   %-40s %8.1f %8.1f\n", "cudaHostRegister, cudaHostUnregister", per_gib(reg.acquire),
                per_gib(reg.release));
  out << format("   one H2D copy of %s: pageable %.2f ms, pinned %.2f ms, registered %.2f ms\n",
                workbook::format_bytes(bytes).c_str(), pageable_ms, pinned_ms, registered_ms);
  out << format("   break-even: cudaMallocHost instead of malloc pays after %s copies, cudaHostRegister after %s\n",
                copies_text(pin_copies).c_str(), copies_text(reg_copies).c_str());
  nlohmann::json j = {{"bytes", bytes},
                      {"malloc_touch", stats_json(touch.acquire)},
                      {"malloc_host", stats_json(pin.acquire)},
                      {"host_register", stats_json(reg.acquire)},
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
// (5) non_blocking=True: how long the host spends inside cudaMemcpyAsync while the GPU is busy.

struct AsyncCall {
  double call_ms;         // host time inside cudaMemcpyAsync
  bool returned_early;    // the call returned before the kernel queued ahead of it had finished
};

AsyncCall time_async_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind direction, double spin_ms,
                          cudaStream_t stream) {
  transfer::spin_on_gpu(spin_ms, stream);  // the copy queues behind this "training step"
  workbook::Event step_done;
  step_done.record(stream);
  const auto start = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, direction, stream));
  const double call_ms = milliseconds_since(start);
  // Ask about the kernel, not the stream: a pageable copy can return with its last staged chunk
  // still in flight, which says nothing about whether the host waited for the kernel.
  const cudaError_t state = cudaEventQuery(step_done.get());  // cudaErrorNotReady: still running
  if (state != cudaErrorNotReady) CUDA_CHECK(state);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return {call_ms, state == cudaErrorNotReady};
}

void measure_non_blocking(Report& report, const Options& o, std::byte* d_a, std::size_t device_bytes,
                          cudaStream_t stream) {
  workbook::NvtxRange range("non_blocking");
  std::ostream& out = report.out();
  const std::size_t bytes = std::min<std::size_t>((o.common.quick ? 16 : 64) * kMiB, device_bytes);
  out << format("== (5) non_blocking: host time inside cudaMemcpyAsync of %s queued behind a %.0f ms kernel\n",
                workbook::format_bytes(bytes).c_str(), o.spin_ms);
  nlohmann::json j = {{"bytes", bytes}, {"spin_ms", o.spin_ms}};
  for (const HostMemory kind : {HostMemory::kPageable, HostMemory::kPinned}) {
    HostBuffer host(bytes, kind);
    transfer::fill_pattern(host.data(), bytes, 99);
    for (const cudaMemcpyKind direction : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost}) {
      const bool h2d = direction == cudaMemcpyHostToDevice;
      void* dst = h2d ? static_cast<void*>(d_a) : static_cast<void*>(host.data());
      const void* src = h2d ? static_cast<const void*>(host.data()) : static_cast<const void*>(d_a);
      (void)time_async_call(dst, src, bytes, direction, 1.0, stream);  // warm-up
      std::vector<double> ms;
      bool early = true;
      for (int i = 0; i < 3; ++i) {
        const AsyncCall call = time_async_call(dst, src, bytes, direction, o.spin_ms, stream);
        ms.push_back(call.call_ms);
        early = early && call.returned_early;
      }
      const Stats t = workbook::summarize(ms);
      const std::string key = std::string(transfer::host_memory_name(kind)) + (h2d ? "_h2d" : "_d2h");
      out << format("   %-8s %s: %9.3f ms in the call; returned before the kernel ahead of it finished: %s\n",
                    transfer::host_memory_name(kind), h2d ? "H2D" : "D2H", t.median, early ? "yes" : "no");
      j[key] = {{"call_ms", t.median}, {"returned_while_busy", early}};
    }
  }
  out << "   (pinned: the copy is only queued, the host runs on; pageable: the driver stages the data\n"
         "    through its own pinned buffer and the host waits for the GPU, whatever non_blocking says)\n";
  report.json()["non_blocking"] = j;
}

// ---------------------------------------------------------------------------------------------

struct MemoryInfo {
  std::size_t free = 0, total = 0;
};

MemoryInfo memory_info() {
  MemoryInfo m;
  CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{"Where a tensor lives and what moving it costs: H2D/D2H/D2D bandwidth for pageable, pinned "
               "and registered host memory, the cost of pinning, non_blocking, and random tensors made on "
               "the host vs the GPU."};
  workbook::add_common_options(app, o.common);
  workbook::add_size_option(app, "--max-mib", o.max_mib,
                            "largest copy in MiB, a power of two (default 1024; --quick: 64)");
  app.add_option("--repeats", o.repeats, "timed repeats of a small copy; large copies get fewer (default 20)");
  workbook::add_size_option(app, "--random-mib", o.random_mib,
                            "size of the random tensor in MiB (default 256; --quick: 16)");
  app.add_option("--spin-ms", o.spin_ms, "how long the GPU is kept busy in the non_blocking demo (default 20)");
  if (auto code = workbook::parse_command_line(app, argc, argv)) return *code;
  if (o.common.quick) {  // --quick sets smaller defaults, explicit flags still win
    if (app.count("--max-mib") == 0) o.max_mib = 64;
    if (app.count("--random-mib") == 0) o.random_mib = 16;
    if (app.count("--repeats") == 0) o.repeats = 5;
    if (app.count("--spin-ms") == 0) o.spin_ms = 10.0;
  }
  workbook::require_at_least("--max-mib", o.max_mib, 1);
  workbook::require_at_most("--max-mib", o.max_mib, 1024);
  if (!transfer::is_power_of_two(static_cast<std::size_t>(o.max_mib))) {
    throw workbook::UsageError("--max-mib must be a power of two, got " + std::to_string(o.max_mib));
  }
  workbook::require_at_least("--repeats", o.repeats, 1);
  workbook::require_at_least("--random-mib", o.random_mib, 1);
  workbook::require_at_most("--random-mib", o.random_mib, 4096);
  workbook::require_positive("--spin-ms", o.spin_ms);
  workbook::require_at_most("--spin-ms", o.spin_ms, 1000.0);

  workbook::use_device(o.common.device);  // exit 77 without a GPU, 2 naming the devices for a bad index
  const int gpu = o.common.device;
  // The random tensor and the two copy buffers are never held at once: each must fit on its own.
  workbook::require_gpu_memory("--random-mib " + std::to_string(o.random_mib),
                               workbook::ByteCount().add(o.random_mib, kMiB));
  workbook::require_gpu_memory("--max-mib " + std::to_string(o.max_mib),
                               workbook::ByteCount().add(o.max_mib, kMiB, 2));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));

  Report report("tensor_transfer", o.common.json);
  report.out() << "device " << gpu << ": " << prop.name << (o.common.quick ? " (--quick)" : "") << "\n";
  report.json()["device"] = {{"index", gpu}, {"name", prop.name}};
  report.json()["quick"] = o.common.quick;

  workbook::Stream stream;
  show_tensor_semantics(report, gpu);
  measure_random_tensor(report, o, gpu, stream.get());

  // Device memory accounting around the two copy buffers (torch.cuda.mem_get_info() is this call).
  const std::size_t buffer_bytes = static_cast<std::size_t>(o.max_mib) * kMiB;
  const MemoryInfo before = memory_info();
  MemoryInfo allocated;
  std::vector<Row> rows;
  {
    workbook::DeviceBuffer<std::byte> d_a(buffer_bytes), d_b(buffer_bytes);
    allocated = memory_info();
    rows = measure_bandwidth(report, o, d_a.data(), d_b.data(), stream.get());
    summarize_headline(report, rows);
    measure_pinning_cost(report, o, rows);
    measure_non_blocking(report, o, d_a.data(), buffer_bytes, stream.get());
  }
  const MemoryInfo after = memory_info();
  const double taken = static_cast<double>(before.free) - static_cast<double>(allocated.free);
  report.out() << "== (6) device memory by cudaMemGetInfo (the driver's view, as torch.cuda.mem_get_info)\n";
  report.out() << format("   total %.2f GiB; free %.2f GiB before the copy buffers (the CUDA context and other\n"
                         "   processes hold the difference)\n",
                         static_cast<double>(before.total) / kGiB, static_cast<double>(before.free) / kGiB);
  report.out() << format("   cudaMalloc of 2 x %s: free fell by %.1f MiB (asked for %.1f MiB); after cudaFree: "
                         "free %.2f GiB\n",
                         workbook::format_bytes(buffer_bytes).c_str(), taken / kMiB,
                         2.0 * static_cast<double>(buffer_bytes) / kMiB, static_cast<double>(after.free) / kGiB);
  report.json()["memory"] = {{"total_bytes", before.total},
                             {"free_before_bytes", before.free},
                             {"free_after_alloc_bytes", allocated.free},
                             {"free_after_free_bytes", after.free},
                             {"requested_bytes", 2 * buffer_bytes}};
  return report.finish();
}

}  // namespace

int main(int argc, char** argv) {
  return workbook::guarded_main("tensor_transfer", [&] { return run(argc, argv); });
}

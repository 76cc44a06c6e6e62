// tensor_transfer.cu: chapter 02's lesson. A PyTorch tensor is two things: a small host object
// (shape, dtype, device) and a block of elements that lives where the device says. Moving it is
// a cudaMemcpy, and how fast that runs depends on the host memory at the other end: pageable
// (plain malloc), pinned (cudaMallocHost) or registered (cudaHostRegister). The steps, numbered
// as the report prints them (== 1. ...): 1. the tensor type and its round trips; 2. a random
// tensor made on the host and copied, against one made on the GPU; 3. one copy of each kind of
// host memory, each way, and one on the device; 4. all of them timed, with what non_blocking=True
// buys; 5. cudaMemGetInfo around the allocations.
// Read it beside "Understanding the Host and Device Paradigm" (tensor metadata in host RAM and
// data in VRAM, host-device synchronization, non_blocking), "The Role of GPUs in Deep Learning"
// (tensors on the device, .to(), .cuda(), get_device()) and "How to Use CUDA with PyTorch:
// Clearly Explained" (moving tensors with .to('cuda'), non_blocking=True, watching GPU memory).
//
//   tensor_transfer                  # a 256 MiB random tensor, copies of 64 MiB: checked, then timed
//   tensor_transfer --quick          # 16 MiB of each (what the tests and compute-sanitizer run)
//   tensor_transfer_bench            # 4 KiB .. 1 GiB, the cost of pinning (bench_transfer.cpp)
//
// The tensor type is in tensor.h, the three kinds of host memory in host_memory.h.
#include "tensor_transfer.h"

#include "cli.h"
#include "compute_capability.h"
#include "cuda_check.h"
#include "format.h"
#include "globaltimer.cuh"
#include "gpu_memory.h"
#include "gpu_probe.h"
#include "nvtx.h"
#include "program.h"
#include "splitmix64.h"
#include "table.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace workbook::transfer {

using workbook::format;

// ---------------------------------------------------------------------------------------------
// The CPU twins: torch.randn(n) made by the host, and the statistics every generator is checked by.

namespace {

// xoshiro256+ (Blackman and Vigna): fast; its lowest bits are weak, and fill_normal_cpu skips them.
struct Xoshiro256Plus {
  std::uint64_t s[4];
  explicit Xoshiro256Plus(std::uint64_t seed) {
    for (std::uint64_t& word : s) word = splitmix64(seed);  // seeded by splitmix64, as the authors advise
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = s[0] + s[3];
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

}  // namespace

void fill_normal_cpu(float* host_data, std::size_t n, std::uint64_t seed) {
  // Box-Muller in float: one 64-bit draw gives two 24-bit uniforms, and they give two normals.
  // (24 bits cap the tails at about 5.8 sigma, which is more than a float32 randn needs here.)
  Xoshiro256Plus rng(seed);
  constexpr float kTwoPi = 6.28318530718f;
  for (std::size_t i = 0; i < n; i += 2) {
    const std::uint64_t bits = rng.next();
    const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * 0x1.0p-24f;       // (0, 1]: log stays finite
    const float u2 = static_cast<float>((bits >> 16) & 0xFFFFFFu) * 0x1.0p-24f;  // [0, 1)
    const float radius = std::sqrt(-2.0f * std::log(u1));
    host_data[i] = radius * std::cos(kTwoPi * u2);
    if (i + 1 < n) host_data[i + 1] = radius * std::sin(kTwoPi * u2);
  }
}

MeanStd mean_std_cpu(const float* host_data, std::size_t n) {
  MeanStd r;
  if (n == 0) return r;
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += host_data[i];
    sum_sq += static_cast<double>(host_data[i]) * host_data[i];
  }
  r.mean = sum / static_cast<double>(n);
  r.std = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - r.mean * r.mean));
  return r;
}

namespace {

// The check of a copy: every byte equal (fill_pattern makes a dropped or shifted byte show).
bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The kernels, each followed by its launcher.

// torch.randn(n, device='cuda'): cuRAND's Philox kernel writes the numbers into GPU memory.
DeviceNormalGenerator::DeviceNormalGenerator(std::uint64_t seed, cudaStream_t stream)
    : generator_(workbook::RngLocation::kDevice, seed, stream), stream_(stream), pair_(2) {}

void DeviceNormalGenerator::fill(float* device_data, std::size_t n) {
  const std::size_t even = n - n % 2;
  if (even > 0) generator_.normal(device_data, even, 0.0f, 1.0f);
  if (n % 2 == 1) {
    generator_.normal(pair_.data(), 2, 0.0f, 1.0f);
    CUDA_CHECK(cudaMemcpyAsync(device_data + even, pair_.data(), sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }
}

Tensor randn(const Shape& shape, Device device, std::uint64_t seed) {
  workbook::NvtxRange range(device.is_cpu() ? "randn on host" : "randn on device");
  Tensor t = Tensor::empty(shape, DType::kFloat32, device);
  const auto n = static_cast<std::size_t>(t.numel());
  if (device.is_cpu()) {
    fill_normal_cpu(static_cast<float*>(t.data_ptr()), n, seed);
  } else {
    DeviceGuard on(device.index);
    DeviceNormalGenerator generator(seed, /*stream=*/nullptr);
    generator.fill(static_cast<float*>(t.data_ptr()), n);
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  return t;
}

// torch.cuda._sleep: one thread that waits on the GPU's nanosecond clock, keeping a stream busy.
__global__ void spin_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = workbook::global_timer_ns();
  while (workbook::global_timer_ns() - start < nanoseconds) __nanosleep(1000);  // sleep: leave the SM quiet
}

void spin_on_gpu(double milliseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(milliseconds * 1e6));
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// 1. The tensor: x.cuda() is one cudaMalloc and one copy; x.shape and x.get_device() are host reads.

void show_tensor(workbook::Report& report, int gpu) {
  workbook::NvtxRange range("tensor semantics");
  std::ostream& out = report.out();
  Tensor x = Tensor::empty({3, 1000, 257}, DType::kFloat32, Device::cpu());
  fill_pattern(static_cast<std::byte*>(x.data_ptr()), x.nbytes(), 1);
  const Tensor g = x.cuda(gpu);  // cudaMalloc on `gpu`, then cudaMemcpy host -> device
  const Tensor same = g.to(Device::cuda(gpu));
  const Tensor back = g.cpu();
  const Tensor pinned = x.pin_memory();
  const bool exact = same_bytes(back, x);
  const bool exact_pinned = same_bytes(pinned.cuda(gpu).cpu(), x) && pinned.is_pinned();
  out << format("   x = empty(%s, %s): device %s, get_device() %d, %zu bytes of pageable host memory\n",
                shape_str(x.shape()).c_str(), dtype_name(x.dtype()), x.device().str().c_str(), x.get_device(),
                x.nbytes());
  out << format("   g = x.cuda(%d): device %s, get_device() %d; its shape and dtype are read from host memory\n",
                gpu, g.device().str().c_str(), g.get_device());
  out << format("   g.to(cuda:%d) shares g's storage (no copy): %s\n", gpu, same.shares_storage_with(g) ? "yes" : "no");
  out << format("   g.cpu() equals x bit for bit: %s; through x.pin_memory(): %s\n", exact ? "yes" : "NO",
                exact_pinned ? "yes" : "NO");

  // Boundary sizes: empty, one byte, around one page, and an odd size of several pages.
  bool boundaries_exact = true;
  for (const std::int64_t n : {0, 1, 4095, 4096, 4097, 1000003}) {
    Tensor h = Tensor::empty({n}, DType::kUInt8, Device::cpu());
    fill_pattern(static_cast<std::byte*>(h.data_ptr()), h.nbytes(), static_cast<std::uint64_t>(n));
    boundaries_exact = boundaries_exact && same_bytes(h.cuda(gpu).cpu(), h);
  }
  out << format("   round trips of 0, 1, 4095, 4096, 4097 and 1000003 bytes bit-exact: %s\n",
                boundaries_exact ? "yes" : "NO");
  report.check(x.get_device() == -1 && g.get_device() == gpu && back.get_device() == -1,
               "get_device() is not -1 on the host and the GPU index on the GPU");
  report.check(same.shares_storage_with(g), "to() onto the same device copied");
  report.check(exact && exact_pinned && boundaries_exact, "a tensor round trip host -> GPU -> host changed bytes");
}

// ---------------------------------------------------------------------------------------------
// 2. torch.randn(n).to('cuda') against torch.randn(n, device='cuda').

RandomTensor::RandomTensor(std::size_t bytes_, int gpu_index, cudaStream_t stream_)
    : bytes(bytes_),
      n(bytes_ / sizeof(float)),
      host(Tensor::empty({static_cast<std::int64_t>(n)}, DType::kFloat32, Device::cpu())),  // pageable
      gpu(Tensor::empty({static_cast<std::int64_t>(n)}, DType::kFloat32, Device::cuda(gpu_index))),
      generator(42, stream_),
      stream(stream_) {}

namespace {

bool check_normal(workbook::Report& report, const char* what, const MeanStd& m, std::size_t n) {
  // Six standard errors: the sample mean has sd 1/sqrt(n), the sample sd about 1/sqrt(2n).
  const double tolerance = 6.0 / std::sqrt(static_cast<double>(n));
  const bool ok = std::fabs(m.mean) <= tolerance && std::fabs(m.std - 1.0) <= tolerance;
  report.out() << format("   check %-32s mean %+.5f, std %.5f (tolerance %.5f): %s\n", what, m.mean, m.std,
                         tolerance, ok ? "ok" : "FAILED");
  report.check(ok, std::string(what) + " are not Normal(0, 1)");
  return ok;
}

// CUDA_FORCE_PTX_JIT=1 makes the driver compile every kernel from its PTX, as on a GPU newer than
// the build. libcurand ships PTX for its newest architecture only, so on this GPU its kernels
// cannot start that way (on a real newer GPU its own machine code serves). The workbook's own
// kernels still run: the step says so in one line, and the program goes on without cuRAND.
bool fill_on_gpu_if_allowed(RandomTensor& t, std::ostream& out) {
  const char* forced = std::getenv("CUDA_FORCE_PTX_JIT");
  try {
    t.generator.fill(static_cast<float*>(t.gpu.data_ptr()), t.n);
    CUDA_CHECK(cudaStreamSynchronize(t.stream));
    return true;
  } catch (const workbook::CurandError& e) {
    if (e.status() != CURAND_STATUS_LAUNCH_FAILURE || forced == nullptr || std::string(forced) != "1") throw;
  }
  (void)cudaGetLastError();  // the refused launch's error is not sticky: cleared, so later checks start clean
  t.made_on_gpu = false;
  out << "   GPU-made numbers skipped: CUDA_FORCE_PTX_JIT=1, and cuRAND ships no PTX that this GPU can compile\n";
  return false;
}

}  // namespace

bool check_random_tensor(RandomTensor& t, workbook::Report& report) {
  workbook::NvtxRange range("random tensor: check");
  auto* host = static_cast<float*>(t.host.data_ptr());
  fill_normal_cpu(host, t.n, 42);
  t.gpu.copy_(t.host);
  const bool copied = same_bytes(t.gpu.cpu(), t.host);
  report.check(copied, "the host-made random tensor changed on its way to the GPU and back");
  const bool host_ok = check_normal(report, "host-made numbers (xoshiro256+):", mean_std_cpu(host, t.n), t.n);
  if (!fill_on_gpu_if_allowed(t, report.out())) return false;
  const Tensor from_gpu = t.gpu.cpu();
  const MeanStd m = mean_std_cpu(static_cast<const float*>(from_gpu.data_ptr()), t.n);
  return check_normal(report, "GPU-made numbers (cuRAND Philox):", m, t.n) && host_ok && copied;
}

// Both on the host clock, from the call until the numbers are in GPU memory.
RandomTensorTimes time_random_tensor(RandomTensor& t, int host_repeats) {
  workbook::NvtxRange range("random tensor: time");
  auto* host = static_cast<float*>(t.host.data_ptr());
  auto* gpu = static_cast<float*>(t.gpu.data_ptr());
  RandomTensorTimes r;
  r.host_then_copy = workbook::time_on_host({1, host_repeats}, [&] {
    fill_normal_cpu(host, t.n, 7);
    t.gpu.copy_(t.host);  // pageable -> device, synchronous, as .to('cuda') from a plain tensor
  });
  r.on_gpu = workbook::time_on_host({2, 10}, [&] {
    t.generator.fill(gpu, t.n);
    CUDA_CHECK(cudaStreamSynchronize(t.stream));
  });
  r.on_gpu_gpu_time = workbook::time_on_stream(t.stream, {2, 10}, [&] { t.generator.fill(gpu, t.n); });
  return r;
}

// ---------------------------------------------------------------------------------------------
// 3. Copies: x.to('cuda') and g.cpu() are cudaMemcpyAsync; the host memory decides their speed.

bool round_trip_exact(const HostBuffer& src, HostBuffer& dst, std::size_t bytes, std::byte* d_a, std::byte* d_b,
                      cudaStream_t stream) {
  if (bytes == 0) return true;
  std::memset(dst.data(), 0xA5, bytes);  // poisoned: a copy that did not happen cannot pass
  CUDA_CHECK(cudaMemsetAsync(d_a, 0x5A, bytes, stream));
  CUDA_CHECK(cudaMemsetAsync(d_b, 0x5A, bytes, stream));
  CUDA_CHECK(cudaMemcpyAsync(d_a, src.data(), bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(d_b, d_a, bytes, cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(dst.data(), d_b, bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::memcmp(dst.data(), src.data(), bytes) == 0;
}

workbook::Stats time_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind direction,
                          cudaStream_t stream, workbook::Repeats repeats) {
  return workbook::time_on_stream(stream, repeats,
                                  [&] { CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, direction, stream)); });
}

// ---------------------------------------------------------------------------------------------
// 4. non_blocking=True is cudaMemcpyAsync without a wait afterwards. Does the host run on?

AsyncCall time_async_call(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind direction, double spin_ms,
                          cudaStream_t stream) {
  spin_on_gpu(spin_ms, stream);  // the copy queues behind this "training step"
  workbook::Event step_done;
  step_done.record(stream);
  const auto start = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, direction, stream));
  const double call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Ask about the kernel, not the stream: a pageable copy can return with its last staged chunk
  // still in flight, which says nothing about whether the host waited for the kernel.
  const cudaError_t state = cudaEventQuery(step_done.get());  // cudaErrorNotReady: still running
  if (state != cudaErrorNotReady) CUDA_CHECK(state);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return {call_ms, state == cudaErrorNotReady};
}

NonBlockingCopy non_blocking_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind direction,
                                  double spin_ms, cudaStream_t stream) {
  workbook::NvtxRange range("non_blocking");
  (void)time_async_call(dst, src, bytes, direction, 1.0, stream);  // warm-up
  std::vector<double> ms;
  bool early = true;
  for (int i = 0; i < 3; ++i) {
    const AsyncCall call = time_async_call(dst, src, bytes, direction, spin_ms, stream);
    ms.push_back(call.call_ms);
    early = early && call.returned_while_busy;
  }
  return {workbook::summarize(ms), early};
}

// ---------------------------------------------------------------------------------------------
// 5. torch.cuda.mem_get_info() is this call.


}  // namespace workbook::transfer

// ---------------------------------------------------------------------------------------------
// The program: check every tensor, random number and copy against its source, then time them,
// then one table. (tensor_transfer_bench and the tests link this file too, its main() renamed:
// cmake/WorkbookChapter.cmake.)
namespace workbook::transfer {
namespace {

struct Options {
  workbook::CommonOptions common;
  int copy_mib = 64;      // each copy; --quick: 16
  int random_mib = 256;   // the random tensor; --quick: 16
  int repeats = 20;       // timed repeats of each copy; --quick: 5
  double spin_ms = 20.0;  // how long the GPU is kept busy in the non_blocking step; --quick: 10
};

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Where a tensor lives and what moving it costs: round trips, a random tensor made on the host vs "
               "the GPU, copies from pageable, pinned and registered memory, and non_blocking"};
  workbook::add_common_options(app, o.common);
  workbook::add_size_option(app, "--copy-mib", o.copy_mib, "size of each copy in MiB (default 64; --quick: 16)");
  workbook::add_size_option(app, "--random-mib", o.random_mib,
                            "size of the random tensor in MiB (default 256; --quick: 16)");
  app.add_option("--repeats", o.repeats, "timed repeats of each copy (default 20; --quick: 5)");
  app.add_option("--spin-ms", o.spin_ms, "how long the GPU is kept busy in the non_blocking step (default 20)");
  if (auto code = workbook::parse_command_line(app, argc, argv)) return code;
  if (o.common.quick) {  // smaller defaults; explicit flags still win
    if (app.count("--copy-mib") == 0) o.copy_mib = 16;
    if (app.count("--random-mib") == 0) o.random_mib = 16;
    if (app.count("--repeats") == 0) o.repeats = 5;
    if (app.count("--spin-ms") == 0) o.spin_ms = 10.0;
  }
  workbook::require_at_least("--copy-mib", o.copy_mib, 1);
  workbook::require_at_most("--copy-mib", o.copy_mib, 1024);
  workbook::require_at_least("--random-mib", o.random_mib, 1);
  workbook::require_at_most("--random-mib", o.random_mib, 4096);
  workbook::require_at_least("--repeats", o.repeats, 1);
  workbook::require_positive("--spin-ms", o.spin_ms);
  workbook::require_at_most("--spin-ms", o.spin_ms, 1000.0);
  return std::nullopt;
}

// The copy step's buffers: two on the device, and a source and a destination of each host kind.
struct CopyBuffers {
  struct Side {
    HostMemory kind;
    HostBuffer src, dst;
    bool exact = false;
  };
  explicit CopyBuffers(std::size_t size) : bytes(size), d_a(size), d_b(size), with_device_buffers(memory_info()) {
    for (const HostMemory kind : kAllHostMemoryKinds) {
      sides.push_back({kind, HostBuffer(size, kind), HostBuffer(size, kind)});
    }
  }
  std::size_t bytes;
  workbook::DeviceBuffer<std::byte> d_a, d_b;
  MemoryInfo with_device_buffers;  // right after d_a and d_b, before any host memory is taken
  std::vector<Side> sides;
};

void check_copies(CopyBuffers& c, workbook::Report& report, cudaStream_t stream) {
  for (CopyBuffers::Side& side : c.sides) {
    fill_pattern(side.src.data(), c.bytes, c.bytes + static_cast<std::size_t>(side.kind));
    side.exact = round_trip_exact(side.src, side.dst, c.bytes, c.d_a.data(), c.d_b.data(), stream);
    report.out() << "   " << host_memory_name(side.kind) << ": bit-exact " << (side.exact ? "yes" : "NO") << "\n";
    report.check(side.exact, std::string("copies through ") + host_memory_name(side.kind) + " memory changed bytes");
  }
}

Table::Row& add_row(Table& table, const char* what, const char* kind, const char* direction, int mib) {
  Table::Row& row = table.add_row().set("what", what).set("kind", kind).set("mib", mib);
  return direction != nullptr ? row.set("direction", direction) : row;
}

void set_times(Table::Row& row, const workbook::Stats& t, std::size_t bytes) {
  row.set("time_ms", workbook::timing(t));
  row.set("gbps", workbook::gigabytes_per_second(static_cast<double>(bytes), t.median));
}

// Every copy of the step, each way, warm-up first; from pageable and pinned memory also the host
// time of a non_blocking call queued behind a busy GPU. Then the copy on the device.
void time_copies(CopyBuffers& c, const Options& o, Table& table, cudaStream_t stream) {
  workbook::NvtxRange range("copies: time");
  const workbook::Repeats repeats{2, o.repeats};
  for (CopyBuffers::Side& side : c.sides) {
    for (const cudaMemcpyKind direction : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost}) {
      const bool h2d = direction == cudaMemcpyHostToDevice;
      void* dst = h2d ? static_cast<void*>(c.d_a.data()) : static_cast<void*>(side.dst.data());
      const void* src = h2d ? static_cast<const void*>(side.src.data()) : static_cast<const void*>(c.d_b.data());
      Table::Row& row = add_row(table, h2d ? "x.to('cuda')" : "g.cpu()", host_memory_name(side.kind),
                                h2d ? "h2d" : "d2h", o.copy_mib);
      set_times(row, time_copy(dst, src, c.bytes, direction, stream, repeats), c.bytes);
      if (side.kind == HostMemory::kRegistered) continue;  // to the copy engine the same as pinned
      const NonBlockingCopy call = non_blocking_copy(dst, src, c.bytes, direction, o.spin_ms, stream);
      row.set("call_ms", workbook::timing(call.call)).set("returned_while_busy", call.returned_while_busy);
    }
  }
  Table::Row& row = add_row(table, "g.clone()", "device", "d2d", o.copy_mib);
  set_times(row, time_copy(c.d_b.data(), c.d_a.data(), c.bytes, cudaMemcpyDeviceToDevice, stream, repeats), c.bytes);
}

void print_memory(std::ostream& out, const MemoryInfo& before, const MemoryInfo& allocated, const MemoryInfo& after,
                  std::size_t bytes) {
  out << "== 5. device memory by cudaMemGetInfo (the driver's view, as torch.cuda.mem_get_info)\n";
  out << format("   total %.2f GiB; free %.2f GiB before the copy buffers (the CUDA context and other\n"
                "   processes hold the difference)\n",
                static_cast<double>(before.total) / kGiB, static_cast<double>(before.free) / kGiB);
  out << format("   cudaMalloc of 2 x %s: free fell by %.1f MiB (asked for %.1f MiB); after cudaFree: free %.2f GiB\n",
                workbook::format_bytes(bytes).c_str(),
                (static_cast<double>(before.free) - static_cast<double>(allocated.free)) / kMiB,
                2.0 * static_cast<double>(bytes) / kMiB, static_cast<double>(after.free) / kGiB);
}

std::string device_name(int gpu) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
  return prop.name;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  workbook::use_device(o.common.device);  // exit 77 without a GPU, 2 naming the devices for a bad index
  const int gpu = o.common.device;
  const std::size_t random_bytes = static_cast<std::size_t>(o.random_mib) * kMiB;
  const std::size_t bytes = static_cast<std::size_t>(o.copy_mib) * kMiB;
  workbook::require_gpu_memory("--random-mib " + std::to_string(o.random_mib) + " with --copy-mib " +
                                   std::to_string(o.copy_mib),
                               workbook::ByteCount().add(o.random_mib, kMiB).add(o.copy_mib, kMiB, 2));
  workbook::Report report("tensor_transfer", o.common.json);
  std::ostream& out = report.out();
  out << "device " << gpu << ": " << workbook::describe_device(gpu) << (o.common.quick ? " (--quick)" : "") << "\n";
  workbook::Stream stream;

  // Every step is checked first; only if all pass is anything timed (step 4).
  // 1. The tensor: metadata on the host, elements on the GPU, round trips.
  out << "== 1. a tensor: metadata on the host, elements where the device says\n";
  show_tensor(report, gpu);
  // 2. Both random tensors.
  out << "== 2. a " << workbook::format_bytes(random_bytes)
      << " Normal(0, 1) float32 tensor: made on the host and copied, or made on the GPU\n";
  RandomTensor random(random_bytes, gpu, stream.get());
  check_random_tensor(random, report);
  // 3. A round trip through each kind of host memory.
  out << "== 3. copies of " << workbook::format_bytes(bytes) << ", H2D -> D2D -> D2H, compared with the source\n";
  const MemoryInfo before = memory_info();
  auto copies = std::make_unique<CopyBuffers>(bytes);
  const MemoryInfo allocated = copies->with_device_buffers;
  check_copies(*copies, report, stream.get());

  // 4. Time, once everything above has passed: the random tensors, then every copy.
  using Style = workbook::Column::Style;
  Table table({{"what", "what"}, {"kind", "host memory"}, {"direction", "copy"}, {"mib", "MiB"},
               {"time_ms", "ms", 3, Style::kTiming}, {"gbps", "GB/s", 1}, {"call_ms", "call ms", 3, Style::kTiming},
               {"returned_while_busy", "returned early"}});
  if (report.passed() && !random.made_on_gpu) {
    out << "== 4. nothing timed: the GPU-made numbers were skipped (step 2)\n";
  } else if (report.passed()) {
    const RandomTensorTimes r = time_random_tensor(random, o.common.quick ? 2 : 3);
    set_times(add_row(table, "torch.randn(n).to('cuda')", "pageable", "h2d", o.random_mib), r.host_then_copy,
              random_bytes);
    set_times(add_row(table, "torch.randn(n, device='cuda')", "none", nullptr, o.random_mib), r.on_gpu, random_bytes);
    time_copies(*copies, o, table, stream.get());
    out << "== 4. each step timed: the median of the timed repeats after warm-up, then min, max, runs (copies:\n"
        << "   CUDA events; randn: the host clock, from the call until the numbers are in GPU memory). non_blocking:\n"
        << format("   call ms is the host time in cudaMemcpyAsync queued behind a %.0f ms kernel (3 calls); returned\n"
                  "   early: before that kernel finished\n", o.spin_ms);
    table.print(out, "   ");
    out << format("   made on the GPU: %.0fx faster (the chapter's target: at least 10x); cuRAND alone: %.3f ms of "
                  "GPU time\n", r.speedup(), r.on_gpu_gpu_time.median)
        << "   (pinned: the copy is only queued, the host runs on; pageable: the driver stages the data through\n"
        << "    its own pinned buffer and the host waits for the GPU, whatever non_blocking says; D2D moves each\n"
        << "    byte twice through GPU memory, read and write: its DRAM traffic is 2x the figure)\n";
  } else {
    out << "== 4. nothing timed: a check above failed\n";
  }
  // 5. What the driver saw of the allocations.
  copies.reset();
  print_memory(out, before, allocated, memory_info(), bytes);
  report.json()["device"] = device_name(gpu);
  report.json()["quick"] = o.common.quick;
  report.json()["copy_mib"] = o.copy_mib;
  report.json()["random_mib"] = o.random_mib;
  report.json()["repeats"] = o.repeats;
  report.json()["spin_ms"] = o.spin_ms;
  report.json()["transfers"] = table.json();
  return report.finish();
}

}  // namespace
}  // namespace workbook::transfer

int main(int argc, char** argv) {
  return workbook::guarded_main("tensor_transfer", [&] { return workbook::transfer::run(argc, argv); });
}

// bench_matmul.cu: chapter 01's measuring harness (program device_query_bench). The lesson
// (device_query.cpp) turns a GPU's specifications into peaks: "CUDA cores" x 2 FLOP x clock for
// FP32, and the tensor cores' rates for TF32 and BF16. This program measures how close real work
// gets, and which work can get close at all:
//
//   torch.matmul as cuBLAS runs it (cublasGemmEx), square C = A B, in three precisions:
//     fp32  torch.backends.cuda.matmul.allow_tf32 = False  CUBLAS_COMPUTE_32F: the CUDA cores
//     tf32  allow_tf32 = True                              CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores
//     bf16  bfloat16 tensors                               BF16 in and out, FP32 accumulate: tensor cores
//   y = a x + y on floats (torch: y.add_(x, alpha=a)): 2 FLOP for every 12 bytes moved.
//
// Each result is checked against a CPU reference in double (sampled outputs of each matmul, every
// element of y), then timed with CUDA events (warm-up, median of the repeats) and reported as
// TFLOP/s, % of the lesson's peak, GB/s and FLOP per byte. That last number, the arithmetic
// intensity, decides whether an operation waits on arithmetic (a large matmul) or on memory
// (y = a x + y): only the first can use what the tensor cores offer.
//
//   device_query_bench                    sizes 1024, 4096, 8192; y = a x + y on 100M floats
//   device_query_bench --sizes 2048 --repeats 50
//   device_query_bench --quick            sizes 256 and 257, 1000003 floats (what the tests run)
//   device_query_bench --json out.json    the table's rows as JSON (pytorch_matmul.py writes the same)
#include "device_query.h"
#include "nvml_reader.h"

#include "ceil_div.h"
#include "cli.h"
#include "compute_capability.h"
#include "copy_ceiling.h"
#include "cublas_check.h"
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

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace workbook::device_query {
namespace {

// ---------------------------------------------------------------------------------------------
// The inputs: uniform in [-1, 1), made on the GPU from a hash of (seed, index). The CPU
// reference makes any element again with the same function, without copying matrices back.

constexpr std::uint64_t kSeedA = 1, kSeedB = 2, kSeedX = 3, kSeedY = 4;
constexpr int kBlock = 256;

// splitmix64's mixing of the index; the top 24 bits, scaled, are exact in float on both sides.
__host__ __device__ inline float uniform_at(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed * 0xD1B54A32D192ED03ull + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}


__global__ void fill_uniform_kernel(float* out, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = uniform_at(seed, i);
  }
}

void fill_uniform(float* out, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(ceil_div(n, kBlock), 65536));
  fill_uniform_kernel<<<blocks, kBlock, 0, stream>>>(out, n, seed);
  CUDA_CHECK_LAUNCH();
}

// What a bfloat16 tensor holds: each float rounded to the nearest BF16 (8 significant bits).
__global__ void to_bf16_kernel(const float* in, __nv_bfloat16* out, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

void to_bf16(const float* in, __nv_bfloat16* out, std::size_t n, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(ceil_div(n, kBlock), 65536));
  to_bf16_kernel<<<blocks, kBlock, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// The element-wise operation, y = a x + y: one fused multiply-add per 12 bytes (read x and y,
// write y). Its CPU twin does the same single fmaf, so the two agree bit for bit.

// Four floats per thread, moved with 16-byte loads and stores: a quarter of the memory
// instructions of one float per thread, and more bytes in flight per thread, which is what it
// takes to run at the copy's rate (PyTorch's element-wise kernels load 4-wide for the same reason;
// with one float per thread this kernel measured about 20% slower than y.add_ on an H200). x and y
// come from cudaMalloc, so 16-byte aligned; the last n % 4 elements go one at a time.
constexpr int kAxpyWidth = 4;

__global__ void axpy_kernel(std::size_t n, float a, const float* x, float* y) {
  const std::size_t i = (std::size_t{blockIdx.x} * blockDim.x + threadIdx.x) * kAxpyWidth;
  if (i + kAxpyWidth <= n) {
    const float4 xv = *reinterpret_cast<const float4*>(x + i);
    float4 yv = *reinterpret_cast<const float4*>(y + i);
    yv.x = fmaf(a, xv.x, yv.x);
    yv.y = fmaf(a, xv.y, yv.y);
    yv.z = fmaf(a, xv.z, yv.z);
    yv.w = fmaf(a, xv.w, yv.w);
    *reinterpret_cast<float4*>(y + i) = yv;
  } else {
    for (std::size_t j = i; j < n; ++j) y[j] = fmaf(a, x[j], y[j]);
  }
}

void axpy(std::size_t n, float a, const float* x, float* y, cudaStream_t stream) {
  axpy_kernel<<<static_cast<unsigned>(ceil_div(n, std::size_t{kBlock} * kAxpyWidth)), kBlock, 0, stream>>>(n, a, x, y);
  CUDA_CHECK_LAUNCH();
}

float axpy_cpu(float a, float x, float y) { return std::fma(a, x, y); }

// ---------------------------------------------------------------------------------------------
// The matmul in each precision, and what each may get wrong.

struct Precision {
  const char* name;
  const char* torch;          // the PyTorch setting that makes the same cuBLAS call
  cudaDataType_t ab_type;     // A and B as stored
  cudaDataType_t c_type;      // C as stored
  cublasComputeType_t compute;
  double input_roundoff;      // relative rounding of each input before it is multiplied
  double output_roundoff;     // relative rounding of C when it is stored
};

// TF32 keeps 10 of FP32's 23 mantissa bits (2^-10 allows for truncation as well as rounding);
// BF16 keeps 7 and is rounded to nearest (2^-8) when the inputs are made and when C is stored.
// FP32 is CUBLAS_COMPUTE_32F in the default math mode, as PyTorch calls it: no TF32 anywhere.
const Precision kPrecisions[] = {
    {"fp32", "allow_tf32=False", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0.0, 0.0},
    {"tf32", "allow_tf32=True", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 0x1p-10, 0.0},
    {"bf16", "bfloat16 tensors", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 0x1p-8, 0x1p-8},
};

// One output of C = A B (column-major, as cuBLAS stores matrices), in double from the same inputs.
// `scale` is the size of the sum's terms, sqrt(sum of their squares): a sum of n terms of random
// sign is about that large, and its rounding errors grow with it, not with the sum itself (which
// can be near 0).
struct Expected {
  double value = 0.0;
  double scale = 0.0;
};

Expected matmul_cpu(int n, int i, int j) {
  Expected e;
  for (int k = 0; k < n; ++k) {
    const double a = uniform_at(kSeedA, i + std::size_t(k) * n);
    const double b = uniform_at(kSeedB, k + std::size_t(j) * n);
    e.value += a * b;
    e.scale += a * b * a * b;
  }
  e.scale = std::sqrt(e.scale);
  return e;
}

// Rounding both inputs moves each term by up to 2u of itself: about u x scale over the sum.
// Accumulating n terms in FP32 adds about 2^-24 sqrt(n) x scale (we allow 2^-22: tensor cores'
// adders are not IEEE ones). Storing C rounds by up to u_out of the result. Four times the first
// two and twice the last is several times what a correct result shows; a wrong one (a transposed
// operand, a lost term, TF32 where FP32 was asked for) is off by much more.
double allowed_error(const Precision& p, int n, const Expected& e) {
  return 4.0 * (2.0 * p.input_roundoff + std::sqrt(double(n)) * 0x1p-22) * e.scale +
         2.0 * p.output_roundoff * std::fabs(e.value);
}

// The four corners and 60 positions drawn with a fixed seed.
std::vector<std::pair<int, int>> sample_positions(int n) {
  std::vector<std::pair<int, int>> at{{0, 0}, {n - 1, n - 1}, {0, n - 1}, {n - 1, 0}};
  std::mt19937 pick(12345);
  std::uniform_int_distribution<int> index(0, n - 1);
  while (at.size() < 64) at.emplace_back(index(pick), index(pick));
  return at;
}

// A cuBLAS handle whose work goes to `stream`.
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    CUBLAS_CHECK(cublasCreate(&handle_));
    try {  // a constructor that throws runs no destructor: the handle goes here
      CUBLAS_CHECK(cublasSetStream(handle_, stream));
      CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));  // TF32 only where the compute type asks
    } catch (...) {
      (void)cublasDestroy(handle_);
      throw;
    }
  }
  ~CublasHandle() { (void)cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// One size's matrices: FP32 inputs and output, and the BF16 copies of all three.
struct Matrices {
  Matrices(int size, cudaStream_t stream)
      : n(size), elements(std::size_t(size) * size), a(elements), b(elements), c(elements), a16(elements),
        b16(elements), c16(elements) {
    fill_uniform(a.data(), elements, kSeedA, stream);
    fill_uniform(b.data(), elements, kSeedB, stream);
    to_bf16(a.data(), a16.data(), elements, stream);
    to_bf16(b.data(), b16.data(), elements, stream);
  }
  int n;
  std::size_t elements;
  workbook::DeviceBuffer<float> a, b, c;
  workbook::DeviceBuffer<__nv_bfloat16> a16, b16, c16;
};

void matmul(cublasHandle_t handle, const Precision& p, Matrices& m) {
  const float alpha = 1.0f, beta = 0.0f;
  const bool bf16 = p.ab_type == CUDA_R_16BF;
  const void* a = bf16 ? static_cast<const void*>(m.a16.data()) : m.a.data();
  const void* b = bf16 ? static_cast<const void*>(m.b16.data()) : m.b.data();
  void* c = bf16 ? static_cast<void*>(m.c16.data()) : m.c.data();
  CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m.n, m.n, m.n, &alpha, a, p.ab_type, m.n, b, p.ab_type,
                            m.n, &beta, c, p.c_type, m.n, p.compute, CUBLAS_GEMM_DEFAULT));
}

double read_output(const Matrices& m, const Precision& p, int i, int j) {
  const std::size_t at = i + std::size_t(j) * m.n;
  if (p.c_type == CUDA_R_16BF) {
    __nv_bfloat16 v;
    CUDA_CHECK(cudaMemcpy(&v, m.c16.data() + at, sizeof v, cudaMemcpyDeviceToHost));
    return __bfloat162float(v);
  }
  float v = 0.0f;
  CUDA_CHECK(cudaMemcpy(&v, m.c.data() + at, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

// Every sampled output within its allowed error. Returns the worst |error| / scale.
struct MatmulCheck {
  bool ok = true;
  double worst = 0.0;
};

MatmulCheck check_matmul(Report& report, const Precision& p, const Matrices& m,
                         const std::vector<std::pair<int, int>>& at, const std::vector<Expected>& want) {
  MatmulCheck c;
  int listed = 0;
  for (std::size_t s = 0; s < at.size(); ++s) {
    const double got = read_output(m, p, at[s].first, at[s].second);
    const double error = std::isnan(got) ? INFINITY : std::fabs(got - want[s].value);
    c.worst = std::max(c.worst, error / want[s].scale);
    if (!(error <= allowed_error(p, m.n, want[s]))) {
      c.ok = false;
      if (listed++ < 3) {
        report.out() << format("   %s n=%d: C[%d,%d] = %.9g, want %.9g (allowed error %.3g)\n", p.name, m.n,
                               at[s].first, at[s].second, got, want[s].value, allowed_error(p, m.n, want[s]));
      }
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// The measurements, as rows of one table.

struct Options {
  workbook::CommonOptions common;
  std::vector<std::int64_t> sizes{1024, 4096, 8192};
  int repeats = 20;
  std::int64_t axpy_elements = 100'000'000;
};

// What the work could reach on this GPU: the lesson's peaks, and its memory bandwidth.
struct Ceilings {
  device_query::ComputePeaks peaks;
  double memory_gbps = 0.0;
  std::string unknown;  // "not known for sm_XY" (or "no TF32/BF16 tensor cores on sm_75")
  std::string unknown_tensor;

  std::optional<double> tflops(const std::string& precision) const {
    if (precision == "tf32") return peaks.tf32_tensor_tflops;
    if (precision == "bf16") return peaks.bf16_tensor_tflops;
    return peaks.fp32_tflops;
  }
};

// With NVML, the GPU's state while each matmul was timed sits beside its TFLOP/s (the medians of
// readings every 10 ms: power, die temperature, SM clock).
Table results_table(bool gpu_state) {
  using Style = workbook::Column::Style;
  std::vector<Column> columns{{"operation", "operation"}, {"precision", "precision"}, {"size", "size"},
                              {"flop_per_byte", "FLOP/byte", 1}, {"time_ms", "ms", 3, Style::kTiming},
                              {"tflops", "TFLOP/s", 2}};
  if (gpu_state) {
    columns.insert(columns.end(), {{"power_w", "W", 0}, {"temperature_c", "C", 0}, {"sm_clock_mhz", "SM MHz", 0}});
  }
  columns.insert(columns.end(),
                 {{"percent_of_peak", "% of peak", 1}, {"gbps", "GB/s", 0}, {"roofline", "roofline"},
                  {"error_over_scale", "error/scale", 1, Style::kScientific}, {"check", "check"}, {"n", ""},
                  {"flop", ""}, {"bytes", ""}, {"peak_tflops", ""}, {"peak_gbps", ""}, {"passed", ""},
                  {"skipped", ""}, {"torch", ""}});
  return Table(std::move(columns));
}

// Time, rates and the comparison with the ceilings, for a row whose check passed.
void add_timing(Table::Row& row, const Stats& t, double flop, double bytes, std::optional<double> peak_tflops,
                const Ceilings& c, bool memory_row) {
  const double tflops = flop / (t.median * 1e-3) / 1e12;
  const double gbps = workbook::gigabytes_per_second(bytes, t.median);
  row.set("time_ms", workbook::timing(t));
  row.set("tflops", tflops).set("gbps", gbps);
  if (memory_row) {
    row.set("percent_of_peak", 100.0 * gbps / c.memory_gbps).set("peak_gbps", c.memory_gbps);
  } else if (peak_tflops) {
    row.set("percent_of_peak", 100.0 * tflops / *peak_tflops).set("peak_tflops", *peak_tflops);
  }
  // Below the ridge point (peak FLOP/s over peak bytes/s) memory cannot feed the arithmetic at its
  // peak: the roofline model's verdict, which says nothing about launch cost or a small grid.
  if (peak_tflops) {
    const bool memory_bound = flop / bytes < *peak_tflops * 1e12 / (c.memory_gbps * 1e9);
    row.set("roofline", memory_bound ? "memory-bound" : "compute-bound");
  }
}

void measure_matmuls(Report& report, Table& table, const Options& o, const Ceilings& c, bool tensor_cores,
                     const std::string& why_not, const Nvml& nvml, cudaStream_t stream) {
  CublasHandle handle(stream);
  const workbook::Repeats repeats{o.common.quick ? 1 : 3, o.repeats};
  for (const std::int64_t size : o.sizes) {
    const int n = static_cast<int>(size);
    workbook::NvtxRange range(("matmul n=" + std::to_string(n)).c_str());
    workbook::require_gpu_memory("--sizes " + std::to_string(n),
                                 workbook::ByteCount().add(size * size, 4, 3).add(size * size, 2, 3));
    Matrices m(n, stream);
    const auto at = sample_positions(n);
    std::vector<Expected> want;
    for (const auto& [i, j] : at) want.push_back(matmul_cpu(n, i, j));
    for (const Precision& p : kPrecisions) {
      const bool bf16 = p.ab_type == CUDA_R_16BF;
      const double flop = 2.0 * n * double(n) * n;
      const double bytes = 3.0 * n * double(n) * (bf16 ? 2 : 4);  // read A and B, write C, once each
      Table::Row& row = table.add_row().set("operation", "matmul").set("precision", p.name)
                            .set("size", std::to_string(n) + "^3").set("n", n).set("flop", flop).set("bytes", bytes)
                            .set("flop_per_byte", flop / bytes).set("torch", p.torch);
      if (std::string(p.name) != "fp32" && !tensor_cores) {
        row.set("skipped", why_not).set("check", "skipped: " + why_not);
        continue;
      }
      // The check run: C starts as NaN, so an output cuBLAS did not write cannot pass.
      CUDA_CHECK(cudaMemsetAsync(bf16 ? static_cast<void*>(m.c16.data()) : m.c.data(), 0xFF,
                                 m.elements * (bf16 ? 2 : 4), stream));
      matmul(handle.get(), p, m);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const MatmulCheck check = check_matmul(report, p, m, at, want);
      row.set("error_over_scale", check.worst).set("passed", check.ok).set("check", check.ok ? "ok" : "FAILED");
      report.check(check.ok, std::string(p.name) + " matmul of size " + std::to_string(n) + " differs from the reference");
      if (!check.ok) continue;
      std::optional<StateSampler> sampler;
      if (nvml.available()) sampler.emplace(nvml);
      const Stats t = workbook::time_on_stream(stream, repeats, [&] { matmul(handle.get(), p, m); });
      add_timing(row, t, flop, bytes, c.tflops(p.name), c, false);
      if (sampler) {
        const GpuState during = median_state(sampler->stop());
        row.set("power_w", during.power_w).set("temperature_c", during.temperature_c)
            .set("sm_clock_mhz", during.sm_clock_mhz);
      }
      if (!c.tflops(p.name)) row.set("percent_of_peak", std::string(p.name) == "fp32" ? c.unknown : c.unknown_tensor);
    }
  }
}

// Returns the median time in ms (0 when the check failed and nothing was timed).
double measure_axpy(Report& report, Table& table, const Options& o, const Ceilings& c, cudaStream_t stream) {
  workbook::NvtxRange range("axpy");
  const auto n = static_cast<std::size_t>(o.axpy_elements);
  workbook::DeviceBuffer<float> x(n), y(n);
  fill_uniform(x.data(), n, kSeedX, stream);
  fill_uniform(y.data(), n, kSeedY, stream);
  const float a = 0.5f;
  axpy(n, a, x.data(), y.data(), stream);

  // Every element against the twin, copied back in chunks so the host needs 64 MiB, not all of y.
  std::vector<float> back(std::min<std::size_t>(n, std::size_t{1} << 24));
  std::size_t wrong = 0;
  for (std::size_t start = 0; start < n; start += back.size()) {
    const std::size_t count = std::min(back.size(), n - start);
    CUDA_CHECK(cudaMemcpyAsync(back.data(), y.data() + start, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (std::size_t i = 0; i < count; ++i) {
      const float want = axpy_cpu(a, uniform_at(kSeedX, start + i), uniform_at(kSeedY, start + i));
      if (back[i] != want && wrong++ < 3) {
        report.out() << format("   axpy: y[%zu] = %.9g, want %.9g\n", start + i, back[i], want);
      }
    }
  }
  const double flop = 2.0 * n, bytes = 12.0 * n;
  Table::Row& row = table.add_row().set("operation", "axpy").set("precision", "fp32")
                        .set("size", std::to_string(n)).set("n", n).set("flop", flop).set("bytes", bytes)
                        .set("flop_per_byte", flop / bytes).set("torch", "y.add_(x, alpha=a)")
                        .set("passed", wrong == 0).set("check", wrong == 0 ? "ok" : "FAILED");
  report.check(wrong == 0, "y = a x + y differs from its CPU twin in " + std::to_string(wrong) + " elements");
  if (wrong != 0) return 0.0;
  row.set("error_over_scale", 0.0);  // bit-identical to the twin
  // y grows by a x on every call (by 0.5 at most): after the repeats it is still far from overflow.
  const Stats t = workbook::time_on_stream(stream, {o.common.quick ? 1 : 3, o.repeats},
                                           [&] { axpy(n, a, x.data(), y.data(), stream); });
  add_timing(row, t, flop, bytes, c.peaks.fp32_tflops, c, true);
  return t.median;
}

// ---------------------------------------------------------------------------------------------

// The GPU's state before the matmuls, or one line saying why there is none; the JSON's "nvml".
nlohmann::json show_state_before(std::ostream& out, const Nvml& nvml) {
  const std::optional<GpuState> s = nvml.read();
  if (!s) {
    const std::string why = nvml.available() ? "a reading failed" : nvml.reason();
    out << "NVML: not available, " << why << ": no power, temperature or SM clock below\n";
    return {{"available", false}, {"reason", why}};
  }
  out << format("before the matmuls (NVML): %.0f W, %.0f C, SM clock %.0f MHz\n", s->power_w, s->temperature_c,
                s->sm_clock_mhz);
  return {{"available", true},
          {"before", {{"power_w", s->power_w}, {"temperature_c", s->temperature_c}, {"sm_clock_mhz", s->sm_clock_mhz}}}};
}

std::string peak_text(const std::optional<double>& tflops, const std::string& otherwise) {
  return tflops ? format("%.1f TFLOP/s", *tflops) : otherwise;
}

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Chapter 01's bench: matmuls in FP32, TF32 and BF16 (cuBLAS) and y = a x + y, each checked, timed "
               "and set against the peaks that device_query derives"};
  app.name("device_query_bench");
  workbook::add_common_options(app, o.common);
  std::string sizes_text;
  app.add_option("--sizes", sizes_text, "matrix sizes n (n x n times n x n), e.g. 1024,4096 (default 1024,4096,8192; "
                                        "--quick: 256,257)")->type_name("LIST");
  app.add_option("--repeats", o.repeats, "timed repeats of each operation, after warm-up (default 20; --quick: 3)");
  workbook::add_size_option(app, "--axpy-elements", o.axpy_elements,
                            "floats in y = a x + y (default 100M; --quick: 1000003)");
  if (auto code = workbook::parse_command_line(app, argc, argv)) return code;
  if (app.count("--sizes")) o.sizes = workbook::parse_size_list("--sizes", sizes_text, 1, 32768);
  if (o.common.quick) {  // --quick sets smaller defaults; flags given explicitly still win
    if (app.count("--sizes") == 0) o.sizes = {256, 257};  // 257: no tensor-core-friendly alignment
    if (app.count("--repeats") == 0) o.repeats = 3;
    if (app.count("--axpy-elements") == 0) o.axpy_elements = 1'000'003;
  }
  workbook::require_at_least("--repeats", o.repeats, 1);
  workbook::require_at_least("--axpy-elements", o.axpy_elements, 1);
  // The kernel's grid holds up to 2^31 - 1 blocks of 1024 elements; the memory check refuses far sooner.
  workbook::require_at_most("--axpy-elements", o.axpy_elements, std::int64_t{1'000'000'000'000});
  return std::nullopt;
}

int run(int argc, char** argv) {
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  workbook::use_device(o.common.device);  // exit 77 without a GPU, 2 naming the devices for a bad index
  const device_query::DeviceReport d = device_query::query_device(o.common.device);
  Ceilings c;
  c.peaks = device_query::compute_peaks(d.major, d.minor, d.multiprocessors, d.sm_clock_khz);
  c.memory_gbps = device_query::peak_memory_bandwidth_gbps(d.memory_clock_khz, d.memory_bus_width_bits);
  c.unknown = device_query::unknown_peak_text(d.major, d.minor, false);
  c.unknown_tensor = device_query::unknown_peak_text(d.major, d.minor, true);
  // TF32 and BF16 matmuls need Ampere's tensor cores (the test variable can pretend an older GPU).
  const workbook::ComputeCapability cc = workbook::device_compute_capability(o.common.device);
  const bool tensor_cores = cc.at_least(8, 0);
  const std::string why_not = "TF32 and BF16 need tensor cores of compute capability 8.0 or newer; this GPU is " +
                              cc.text();

  // Memory is asked for before it is taken, as torch.cuda.mem_get_info() would be: a size that does
  // not fit ends here with one line naming the flag, before any matrix is made.
  const std::int64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  workbook::require_gpu_memory("--sizes " + std::to_string(largest),  // A, B and C in FP32 and in BF16
                               workbook::ByteCount().add(largest * largest, sizeof(float), 3).add(largest * largest, 2, 3));
  workbook::require_gpu_memory("--axpy-elements " + std::to_string(o.axpy_elements),
                               workbook::ByteCount().add(o.axpy_elements, sizeof(float), 2));

  Report report("device_query_bench", o.common.json);
  std::ostream& out = report.out();
  out << "device " << o.common.device << ": " << workbook::describe_device(o.common.device)
      << (o.common.quick ? " (--quick)" : "") << "\n";
  out << format("peaks at %d MHz: FP32 %s on %s CUDA cores; tensor cores, dense: TF32 %s, BF16 %s; memory %.0f GB/s\n",
                d.sm_clock_khz / 1000, peak_text(c.peaks.fp32_tflops, c.unknown).c_str(),
                c.peaks.cuda_cores ? std::to_string(*c.peaks.cuda_cores).c_str() : c.unknown.c_str(),
                peak_text(c.peaks.tf32_tensor_tflops, c.unknown_tensor).c_str(),
                peak_text(c.peaks.bf16_tensor_tflops, c.unknown_tensor).c_str(), c.memory_gbps);

  const Nvml nvml(d.pci_bus_id);
  report.json()["nvml"] = show_state_before(out, nvml);
  workbook::Stream stream;
  Table table = results_table(nvml.available());
  measure_matmuls(report, table, o, c, tensor_cores, why_not, nvml, stream.get());
  const double axpy_ms = measure_axpy(report, table, o, c, stream.get());
  const double copy_gbps = workbook::device_copy_gbps(o.common.quick ? std::size_t{64} << 20 : std::size_t{1} << 30,
                                                      stream.get());

  out << "\nchecked against a CPU reference in double, then timed: " << workbook::median_of(o.repeats, "repeat", "repeats")
      << " after warm-up (CUDA events)\n";
  table.print(out, "  ");
  out << format("  (axpy's %% of peak is of the memory bandwidth; a device-to-device copy reached %.0f GB/s, read + "
                "written)\n", copy_gbps);
  if (axpy_ms > 0.0 && c.peaks.fp32_tflops) {
    const double gflops = 2.0 * double(o.axpy_elements) / (axpy_ms * 1e6);
    out << format("  axpy: %.0f GFLOP/s, %.2f%% of the FP32 peak: at 1/6 FLOP per byte the CUDA cores wait on memory\n",
                  gflops, 100.0 * gflops / (*c.peaks.fp32_tflops * 1e3));
  }
  out << "  ridge points, peak FLOP/s over peak bytes/s:";
  for (const char* precision : {"fp32", "tf32", "bf16"}) {
    if (const auto peak = c.tflops(precision)) out << format(" %s %.0f", precision, *peak * 1e3 / c.memory_gbps);
  }
  out << " FLOP/byte. Below it an operation waits on memory; above it, on arithmetic.\n";

  nlohmann::json& j = report.json();
  j["device"] = d.name;
  j["device_properties"] = {{"index", o.common.device}, {"compute_capability", std::to_string(d.major) + "." +
                            std::to_string(d.minor)}, {"multiprocessors", d.multiprocessors},
                            {"sm_clock_mhz", d.sm_clock_khz / 1000}};
  auto or_null = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["peaks"] = {{"fp32_tflops", or_null(c.peaks.fp32_tflops)}, {"tf32_tensor_tflops", or_null(c.peaks.tf32_tensor_tflops)},
                {"bf16_tensor_tflops", or_null(c.peaks.bf16_tensor_tflops)}, {"memory_gbps", c.memory_gbps}};
  j["copy_gbps"] = copy_gbps;
  j["quick"] = o.common.quick;
  j["sizes"] = o.sizes;
  j["repeats"] = o.repeats;
  j["axpy_elements"] = o.axpy_elements;
  j["operations"] = table.json();
  return report.finish();
}

}  // namespace
}  // namespace workbook::device_query

int main(int argc, char** argv) {
  return workbook::guarded_main("device_query_bench", [&] { return workbook::device_query::run(argc, argv); });
}

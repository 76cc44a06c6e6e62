// test_01_device_query.cpp: device_query's answers, checked against sources other than itself:
// the CUDA runtime in this test process, nvidia-smi, and PyTorch.
#include "device_query.h"
#include "nvml_reader.h"

#include "gpu_support.h"
#include "program_checks.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/catch_approx.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using workbook::testing::check_no_gpu;
using workbook::testing::check_one_line;
using workbook::testing::check_usage_error;
using workbook::testing::ProgramResult;
using workbook::testing::require_pass;
using workbook::testing::run_program;
using workbook::testing::with_args;
using workbook::testing::Stdout;
using workbook::testing::take_json;
using workbook::testing::with_args;
using workbook::testing::without_gpus;
namespace device_query = workbook::device_query;

namespace {

// The program's --quick run as JSON; a bench without a GPU skips (the lesson answers "no" and passes).
nlohmann::json run_quick_json(const std::string& program, const std::map<std::string, std::string>& env = {}) {
  const std::string path = workbook::testing::temp_path("device_query.json");
  const ProgramResult r = run_program({program, "--quick", "--json", path}, env);
  workbook::testing::skip_if_no_gpu(r);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(workbook::testing::last_line(r.out) == "PASS");
  return take_json(path);
}

}  // namespace

TEST_CASE("peak memory bandwidth is two transfers per clock over the bus width") {
  // H100 SXM: 2619 MHz HBM3 on a 5120-bit bus is the datasheet's 3.35 TB/s.
  CHECK(device_query::peak_memory_bandwidth_gbps(2'619'000, 5120) == Catch::Approx(3352.32));
  CHECK(device_query::peak_memory_bandwidth_gbps(1'000'000, 64) == Catch::Approx(16.0));
  CHECK(device_query::peak_memory_bandwidth_gbps(0, 5120) == 0.0);
}

TEST_CASE("CUDA cores and peak FLOP/s reproduce the published figures (within 2%)") {
  using device_query::compute_peaks;
  // The article's counts: A100 6912 CUDA cores (108 SMs x 64), RTX 3080 8704 (68 SMs x 128).
  CHECK(compute_peaks(8, 0, 108, 1'410'000).cuda_cores == 6912);
  CHECK(compute_peaks(8, 6, 68, 1'710'000).cuda_cores == 8704);

  // A100 SXM at its 1410 MHz boost: 19.5 TFLOPS FP32, 156 TF32 and 312 BF16 dense on tensor cores.
  const auto a100 = compute_peaks(8, 0, 108, 1'410'000);
  REQUIRE(a100.fp32_tflops);
  REQUIRE(a100.tf32_tensor_tflops);
  REQUIRE(a100.bf16_tensor_tflops);
  CHECK(*a100.fp32_tflops == Catch::Approx(19.5).epsilon(0.02));
  CHECK(*a100.tf32_tensor_tflops == Catch::Approx(156.0).epsilon(0.02));
  CHECK(*a100.bf16_tensor_tflops == Catch::Approx(312.0).epsilon(0.02));

  // H100 SXM: NVIDIA's tensor figures use 1830 MHz (989 BF16, 495 TF32 dense), its FP32 figure
  // the 1980 MHz that cudaDevAttrClockRate reports (67 TFLOPS on 16896 CUDA cores).
  const auto h100_tensor = compute_peaks(9, 0, 132, 1'830'000);
  REQUIRE(h100_tensor.bf16_tensor_tflops);
  REQUIRE(h100_tensor.tf32_tensor_tflops);
  CHECK(*h100_tensor.bf16_tensor_tflops == Catch::Approx(989.0).epsilon(0.02));
  CHECK(*h100_tensor.tf32_tensor_tflops == Catch::Approx(494.7).epsilon(0.02));
  const auto h100 = compute_peaks(9, 0, 132, 1'980'000);
  CHECK(h100.cuda_cores == 16896);
  REQUIRE(h100.fp32_tflops);
  CHECK(*h100.fp32_tflops == Catch::Approx(66.9).epsilon(0.02));
}

TEST_CASE("an architecture the peak table does not know gets no number but a reason") {
  using device_query::compute_peaks;
  const auto future = compute_peaks(13, 0, 100, 2'000'000);
  CHECK_FALSE(future.fp32_lanes_per_sm);
  CHECK_FALSE(future.cuda_cores);
  CHECK_FALSE(future.fp32_tflops);
  CHECK_FALSE(future.tf32_tensor_tflops);
  CHECK_FALSE(future.bf16_tensor_tflops);
  CHECK(device_query::unknown_peak_text(13, 0, false) == "not known for sm_130");
  // Ada's tensor rate with FP32 accumulate differs between GeForce and workstation cards.
  const auto ada = compute_peaks(8, 9, 128, 2'520'000);
  CHECK(ada.cuda_cores == 16384);
  CHECK_FALSE(ada.bf16_tensor_tflops);
  CHECK(device_query::unknown_peak_text(8, 9, true) == "not known for sm_89");
  // Turing has tensor cores, but for FP16 and integers only.
  CHECK_FALSE(compute_peaks(7, 5, 40, 1'590'000).tf32_tensor_tflops);
  CHECK(device_query::unknown_peak_text(7, 5, true) == "no TF32/BF16 tensor cores on sm_75");
  CHECK(compute_peaks(7, 5, 40, 1'590'000).cuda_cores == 2560);  // T4
}

TEST_CASE("with every device hidden, 'not available' is an answer: exit 0 and the reason") {
  const std::string path = workbook::testing::temp_path("device_query.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--json", path}, without_gpus());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, ContainsSubstring("CUDA available: no ("));
  CHECK(workbook::testing::last_line(r.out) == "PASS");
  const nlohmann::json j = workbook::testing::read_json(path);
  CHECK(j["device"] == "CPU");
  CHECK(j["quick"] == false);
  CHECK(j["runtime"]["cuda_available"] == false);
  CHECK(j["runtime"]["device_count"] == 0);
  CHECK(j["runtime"]["driver_version"].is_string());
  CHECK_FALSE(j.contains("cuda_available"));  // the runtime's row is under "runtime", not the top level
  CHECK_THAT(r.out, ContainsSubstring("== 1. the runtime"));
  CHECK_FALSE(j["runtime"]["reason"].get<std::string>().empty());
  std::remove(path.c_str());
}

TEST_CASE("bad flags are refused with one line and exit 2") {
  for (const auto& args : {std::vector<std::string>{"--bogus"}, {"--device", "abc"}, {"--json", "a", "b"}}) {
    check_one_line(with_args({WORKBOOK_PROGRAM}, args), 2, StartsWith("error: "));
  }
}

TEST_CASE("a malformed device flag is usage: exit 2 with one line, before any CUDA call") {
  for (const char* device : {"gpu", "cuda:", "-1", "1.5", "cuda:x"}) {
    check_one_line({WORKBOOK_PROGRAM, "--device", device}, 2, StartsWith("error: --device must be N, cuda or cuda:N"),
                   Stdout::kEmpty);
  }
  for (const std::vector<std::string>& empty : {std::vector<std::string>{"--device", ""}, {"--device="}}) {
    check_one_line(with_args({WORKBOOK_PROGRAM}, empty), 2, StartsWith("error: --device needs a value, and '' is none"),
                   Stdout::kEmpty);
  }
}

TEST_CASE("no GPU with a device flag is still the answer: exit 0 and 'CUDA available: no'") {
  for (const char* device : {"0", "5", "cuda", "cuda:0", "cuda:3"}) {
    const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--device", device}, without_gpus());
    CAPTURE(device, r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, ContainsSubstring("CUDA available: no ("));
    CHECK(workbook::testing::last_line(r.out) == "PASS");
    CHECK(r.err.empty());
  }
}

TEST_CASE("the --help flag exits 0 and lists the flags") {
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, ContainsSubstring("--device") && ContainsSubstring("--json") && ContainsSubstring("--quick"));
}

TEST_CASE("a device index that does not exist exits 2 naming the devices that do", "[gpu]") {
  workbook::testing::require_gpus(1);
  for (const char* index : {"999", "cuda:999"}) {
    const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--device", index});
    const ProgramResult bench = run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--device", index});
    CAPTURE(index, r.err, bench.err);
    CHECK(bench.exit_code == 2);
    CHECK_THAT(bench.err, ContainsSubstring("invalid device ordinal") && ContainsSubstring("this machine has"));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, ContainsSubstring("invalid device ordinal") && ContainsSubstring("this machine has") &&
                          ContainsSubstring("0 ("));
  }
}

TEST_CASE("device count and properties agree with the runtime in another process", "[gpu]") {
  workbook::testing::require_gpus(1);
  const nlohmann::json j = run_quick_json(WORKBOOK_PROGRAM);
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  CHECK(j["runtime"]["cuda_available"] == true);
  CHECK(j["runtime"]["device_count"] == count);
  CHECK(j["runtime"]["current_device"] == 0);
  // Driver load and context creation happen once per process: a timing of one run.
  CHECK(j["runtime"]["init_ms"]["runs"] == 1);
  CHECK(j["runtime"]["init_ms"]["median"].get<double>() > 0.0);
  CHECK(j["device"] == j["devices"][0]["name"]);
  REQUIRE(j["devices"].size() == static_cast<std::size_t>(count));
  for (const auto& d : j["devices"]) {
    cudaDeviceProp prop{};
    REQUIRE(cudaGetDeviceProperties(&prop, d["index"].get<int>()) == cudaSuccess);
    CHECK(d["name"] == std::string(prop.name));
    CHECK(d["total_global_mem_bytes"] == prop.totalGlobalMem);
    CHECK(d["multiprocessors"] == prop.multiProcessorCount);
    CHECK(d["warp_size"] == 32);
    CHECK(d["free_global_mem_bytes"].get<std::size_t>() <= prop.totalGlobalMem);
    CHECK(d["peak_memory_bandwidth_gbps"].get<double>() > 100.0);
    // "CUDA cores" are SMs x FP32 lanes; a capability the table does not know says so instead.
    if (d["fp32_lanes_per_sm"].is_number()) {
      CHECK(d["cuda_cores"] == prop.multiProcessorCount * d["fp32_lanes_per_sm"].get<int>());
      CHECK(d["peak_fp32_tflops"].get<double>() > 0.0);
    } else {
      CHECK_THAT(d["cuda_cores"].get<std::string>(), StartsWith("not known for sm_"));
    }
  }
}

TEST_CASE("CUDA_VISIBLE_DEVICES renumbers: the one visible device is device 0", "[gpu]") {
  workbook::testing::require_gpus(1);
  const nlohmann::json all = run_quick_json(WORKBOOK_PROGRAM);
  const int last = all["runtime"]["device_count"].get<int>() - 1;
  // With one GPU this only shows the filter keeps it; with two or more, the last card becomes 0.
  const nlohmann::json one = run_quick_json(WORKBOOK_PROGRAM, {{"CUDA_VISIBLE_DEVICES", std::to_string(last)}});
  CHECK(one["runtime"]["device_count"] == 1);
  REQUIRE(one["devices"].size() == 1);
  CHECK(one["devices"][0]["index"] == 0);
  CHECK(one["devices"][0]["pci_bus_id"] == all["devices"][last]["pci_bus_id"]);
}

TEST_CASE("name and memory agree with nvidia-smi", "[gpu]") {
  workbook::testing::require_gpus(1);
  const nlohmann::json j = run_quick_json(WORKBOOK_PROGRAM);
  for (const auto& d : j["devices"]) {
    const ProgramResult smi = run_program({"nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits",
                                           "--id=" + d["pci_bus_id"].get<std::string>()});
    if (smi.exit_code == 127) SKIP("nvidia-smi is not installed");
    INFO(smi.err);
    REQUIRE(smi.exit_code == 0);
    std::istringstream fields(smi.out);
    std::string name, total_mib;
    std::getline(fields, name, ',');
    std::getline(fields, total_mib);
    CHECK(d["name"] == name);
    // nvidia-smi counts the whole framebuffer; the runtime leaves out what the driver reserves
    // (a few hundred MiB on an 80-141 GB card).
    const double smi_bytes = std::stod(total_mib) * 1024 * 1024;
    const double cuda_bytes = d["total_global_mem_bytes"].get<double>();
    CHECK(cuda_bytes <= smi_bytes);
    CHECK(cuda_bytes >= 0.97 * smi_bytes);
  }
}

TEST_CASE("memory accounting: the driver sees cudaMalloc, the pool keeps freed memory until trimmed", "[gpu]") {
  workbook::testing::require_gpus(1);
  const nlohmann::json j = run_quick_json(WORKBOOK_PROGRAM);
  const auto& acc = j["memory_accounting"];
  const auto bytes = acc["buffer_bytes"].get<std::size_t>();
  const auto& steps = acc["steps"];
  REQUIRE(steps.size() == 6);
  CHECK(steps[3]["pool_used_bytes"] == bytes);
  CHECK(steps[4]["pool_used_bytes"] == 0);
  CHECK(steps[4]["pool_reserved_bytes"].get<std::size_t>() >= bytes);
  CHECK(steps[5]["pool_reserved_bytes"] == 0);
}

TEST_CASE("device_query agrees with PyTorch's torch.cuda", "[pytorch]") {
  workbook::testing::require_gpus(1);
  workbook::testing::require_torch_cuda(WORKBOOK_PYTHON);
  const std::string script =
      "import json, torch\n"
      "p = [torch.cuda.get_device_properties(i) for i in range(torch.cuda.device_count())]\n"
      "print(json.dumps({'count': torch.cuda.device_count(), 'current': torch.cuda.current_device(),\n"
      "  'devices': [{'name': x.name, 'total': x.total_memory, 'sms': x.multi_processor_count,\n"
      "               'cc': f'{x.major}.{x.minor}', 'l2': x.L2_cache_size} for x in p]}))\n";
  const ProgramResult torch = run_program({WORKBOOK_PYTHON, "-c", script});
  INFO(torch.err);
  REQUIRE(torch.exit_code == 0);
  const nlohmann::json t = nlohmann::json::parse(torch.out);
  const nlohmann::json j = run_quick_json(WORKBOOK_PROGRAM);
  CHECK(j["runtime"]["device_count"] == t["count"]);
  CHECK(j["runtime"]["current_device"] == t["current"]);
  for (std::size_t i = 0; i < t["devices"].size(); ++i) {
    CAPTURE(i);
    CHECK(j["devices"][i]["name"] == t["devices"][i]["name"]);
    CHECK(j["devices"][i]["total_global_mem_bytes"] == t["devices"][i]["total"]);
    CHECK(j["devices"][i]["multiprocessors"] == t["devices"][i]["sms"]);
    CHECK(j["devices"][i]["compute_capability"] == t["devices"][i]["cc"]);
    CHECK(j["devices"][i]["l2_cache_bytes"] == t["devices"][i]["l2"]);
  }
}

// ------------------------------------------------------------------------ device_query_bench

TEST_CASE("the bench refuses bad flags with one line and exit 2, before touching the GPU") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--sizes", "0"}, "--sizes must be at least 1, got 0"},
      {{"--sizes", "1,,2"}, "--sizes: '1,,2' has an empty item"},
      {{"--sizes", "40000"}, "--sizes must be at most 32768, got 40000"},
      {{"--sizes", "5X"}, "--sizes: '5X' is not a size"},
      {{"--repeats", "0"}, "--repeats must be at least 1, got 0"},
      {{"--axpy-elements", "0"}, "--axpy-elements must be at least 1, got 0"},
      {{"--axpy-elements", "2000G"}, "--axpy-elements must be at most 1000000000000, got 2000000000000"},
      {{"--device", "gpu"}, "--device must be N, cuda or cuda:N"},
      {{"--bogus"}, "--bogus"}};
  for (const auto& [args, message] : cases) {
    check_usage_error(with_args({WORKBOOK_BENCH_PROGRAM, "--quick"}, args), message, Stdout::kEmpty);
  }
  const ProgramResult help = run_program({WORKBOOK_BENCH_PROGRAM, "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, ContainsSubstring("--sizes") && ContainsSubstring("--repeats") &&
                           ContainsSubstring("--axpy-elements") && ContainsSubstring("--json"));
}

TEST_CASE("NVML's readings: the median of each field, and no NVML (or no such GPU) is a reason, not an error") {
  using workbook::device_query::GpuState;
  const GpuState m = workbook::device_query::median_state({{300, 40, 1980}, {700, 60, 1755}, {500, 50, 1830}, {600, 55, 1600}});
  CHECK(m.power_w == Catch::Approx(550.0));  // each field on its own: the middle two of four, averaged
  CHECK(m.temperature_c == Catch::Approx(52.5));
  CHECK(m.sm_clock_mhz == Catch::Approx(1792.5));
  CHECK_THROWS_AS(workbook::device_query::median_state({}), std::invalid_argument);
  // No GPU has this bus id: without NVML the library is missing, with it the GPU is; either way
  // the reader says why in one line and reads nothing.
  const workbook::device_query::Nvml nvml("ffff:ff:1f.7");
  CHECK_FALSE(nvml.available());
  CHECK_FALSE(nvml.reason().empty());
  CHECK(nvml.reason().find('\n') == std::string::npos);
  CHECK_FALSE(nvml.read().has_value());
}

TEST_CASE("the bench without a GPU says why in one line and exits 77") {
  check_no_gpu({WORKBOOK_BENCH_PROGRAM, "--quick", "--sizes", "64"}, "device_query_bench");
}

TEST_CASE("the bench refuses a size the GPU cannot hold with one line and exit 1, before any matmul", "[gpu]") {
  workbook::testing::require_gpus(1);
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--axpy-elements", "500G"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());  // refused before the report began
  CHECK_THAT(r.err, StartsWith("error: --axpy-elements 500000000000 needs 3814697.3 MiB of GPU memory, but only ") &&
                        ContainsSubstring(" are free on device 0"));
  CHECK(workbook::testing::count_lines(r.err) == 1);
}

TEST_CASE("device_query_bench --quick: every precision's matmul and y = a x + y pass their checks", "[gpu]") {
  workbook::testing::require_gpus(1);
  const nlohmann::json j = run_quick_json(WORKBOOK_BENCH_PROGRAM);
  CHECK(j["program"] == "device_query_bench");
  CHECK(j["passed"] == true);
  CHECK(j["quick"] == true);
  CHECK(j["device"].is_string());
  CHECK(j["repeats"] == 3);
  REQUIRE(j["nvml"]["available"].is_boolean());
  const bool nvml = j["nvml"]["available"].get<bool>();
  if (nvml) CHECK(j["nvml"]["before"]["sm_clock_mhz"].get<double>() > 0.0);
  const bool tensor_cores = std::stoi(j["device_properties"]["compute_capability"].get<std::string>()) >= 8;  // the major
  std::map<std::string, int> checked;  // precision -> sizes whose check passed
  for (const auto& row : j["operations"]) {
    CAPTURE(row.dump());
    if (row["operation"] == "axpy") {
      CHECK(row["passed"] == true);
      CHECK(row["n"] == 1'000'003);
      CHECK(row["gbps"].get<double>() > 0.0);
      CHECK(row["flop_per_byte"].get<double>() == Catch::Approx(1.0 / 6.0));
      ++checked["axpy"];
      continue;
    }
    REQUIRE(row["operation"] == "matmul");
    const std::string precision = row["precision"];
    if (row.contains("skipped")) {  // TF32 and BF16 only, and only below compute capability 8.0
      CHECK(precision != "fp32");
      CHECK_FALSE(tensor_cores);
      continue;
    }
    CHECK(row["passed"] == true);
    CHECK(row["tflops"].get<double>() > 0.0);
    const nlohmann::json& t = row["time_ms"];  // one shape for every measured time
    CHECK(t["min"].get<double>() <= t["median"].get<double>());
    CHECK(t["median"].get<double>() <= t["max"].get<double>());
    CHECK(t["runs"] == j["repeats"]);
    // FP32 really is FP32: rounding the inputs to TF32 alone would leave errors near 1e-3 of scale.
    if (precision == "fp32") CHECK(row["error_over_scale"].get<double>() < 1e-4);
    if (nvml) {  // the GPU's state while it was timed, beside its TFLOP/s
      CHECK(row["power_w"].get<double>() > 0.0);
      CHECK(row["sm_clock_mhz"].get<double>() > 0.0);
    }
    ++checked[precision];
  }
  CHECK(checked["fp32"] == 2);  // sizes 256 and 257
  CHECK(checked["axpy"] == 1);
  if (tensor_cores) {
    CHECK(checked["tf32"] == 2);
    CHECK(checked["bf16"] == 2);
  }
  if (j["device_properties"]["compute_capability"] == "9.0") CHECK(j["peaks"]["bf16_tensor_tflops"].get<double>() > 0.0);
}

TEST_CASE("device_query_bench on a GPU treated as sm_75 skips TF32 and BF16, says why, and passes", "[gpu]") {
  workbook::testing::require_gpus(1);
  const nlohmann::json j = run_quick_json(WORKBOOK_BENCH_PROGRAM, {{"WORKBOOK_PRETEND_COMPUTE_CAPABILITY", "7.5"}});
  int skipped = 0;
  for (const auto& row : j["operations"]) {
    if (!row.contains("skipped")) continue;
    CHECK(row["precision"] != "fp32");
    CHECK_THAT(row["skipped"].get<std::string>(), ContainsSubstring("compute capability 8.0 or newer"));
    ++skipped;
  }
  CHECK(skipped == 4);  // TF32 and BF16 at sizes 256 and 257
}

TEST_CASE("pytorch_matmul.py --quick: the same matmuls and y = a x + y pass the same checks", "[pytorch]") {
  workbook::testing::require_gpus(1);
  workbook::testing::require_torch_cuda(WORKBOOK_PYTHON);
  const std::string path = workbook::testing::temp_path("pytorch_matmul.json");
  const ProgramResult r = run_program(
      {WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_matmul.py", "--quick", "--json", path});
  CAPTURE(r.out, r.err);
  require_pass(r);
  const nlohmann::json j = take_json(path);
  CHECK(j["program"] == "pytorch_matmul");
  CHECK(j["device"].is_string());
  CHECK(j["quick"] == true);
  std::map<std::string, int> passed;
  for (const auto& row : j["operations"]) {
    CAPTURE(row.dump());
    if (row.contains("skipped")) continue;
    CHECK(row["passed"] == true);
    CHECK(row["time_ms"]["median"].get<double>() > 0.0);
    CHECK(row["time_ms"]["runs"] == j["repeats"]);
    ++passed[row["operation"].get<std::string>() + "/" + row["precision"].get<std::string>()];
  }
  CHECK(passed["matmul/fp32"] == 2);
  CHECK(passed["axpy/fp32"] == 1);
}

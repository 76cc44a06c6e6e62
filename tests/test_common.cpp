// test_common.cpp: the shared pieces in common/. Everything tagged neither [gpu] nor [multigpu]
// runs on a machine with no GPU and no driver.
#include "compare.h"
#include "cli.h"
#include "compute_capability.h"
#include "cublas_check.h"
#include "cuda_check.h"
#include "curand_generator.h"
#include "device_buffer.h"
#include "event_timer.h"
#include "gpu_memory.h"
#include "gpu_probe.h"
#include "gpu_support.h"
#include "output_file.h"
#include "program.h"
#include "program_checks.h"
#include "provenance.h"
#include "report.h"
#include "regression_problem.h"
#include "stats.h"
#include "table.h"
#include "trace.h"
#include "format.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using namespace workbook;
using namespace workbook::testing;

TEST_CASE("CUDA_CHECK throws CudaError naming file, line, expression and error") {
  const int line = __LINE__ + 2;
  try {
    CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL("CUDA_CHECK did not throw");
  } catch (const CudaError& e) {
    CHECK(e.code() == cudaErrorMemoryAllocation);
    const std::string expected = std::string(__FILE__) + ":" + std::to_string(line) +
                                 ": cudaErrorMemoryAllocation failed: cudaErrorMemoryAllocation: out of memory";
    CHECK(std::string(e.what()) == expected);
  }
}

TEST_CASE("CUDA_CHECK is silent on success and evaluates its expression once") {
  int calls = 0;
  auto succeed = [&calls] { ++calls; return cudaSuccess; };
  CHECK_NOTHROW([&] { CUDA_CHECK(succeed()); }());
  CHECK(calls == 1);
}

TEST_CASE("CUBLAS_CHECK throws CublasError naming file, line, expression and status; main exits 1") {
  const int line = __LINE__ + 2;
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    FAIL("CUBLAS_CHECK did not throw");
  } catch (const CublasError& e) {
    CHECK(e.code() == CUBLAS_STATUS_NOT_SUPPORTED);
    CHECK_THAT(std::string(e.what()),
               StartsWith(std::string(__FILE__) + ":" + std::to_string(line) +
                          ": CUBLAS_STATUS_NOT_SUPPORTED failed: CUBLAS_STATUS_NOT_SUPPORTED: "));
  }
  int calls = 0;
  auto succeed = [&calls] { ++calls; return CUBLAS_STATUS_SUCCESS; };
  CHECK_NOTHROW([&] { CUBLAS_CHECK(succeed()); }());
  CHECK(calls == 1);
  CHECK(guarded_main("t", []() -> int { CUBLAS_CHECK(CUBLAS_STATUS_EXECUTION_FAILED); return 0; }) == kExitFailure);
}

TEST_CASE("summarize gives median, min, max and mean") {
  SECTION("odd count: the middle sample") {
    const Stats s = summarize({5.0, 1.0, 3.0});
    CHECK(s.median == 3.0);
    CHECK(s.min == 1.0);
    CHECK(s.max == 5.0);
    CHECK(s.mean == Catch::Approx(3.0));
    CHECK(s.count == 3);
  }
  SECTION("even count: mean of the two middle samples") {
    CHECK(summarize({4.0, 1.0, 2.0, 100.0}).median == 3.0);
  }
  SECTION("one sample") {
    const Stats s = summarize({7.5});
    CHECK(s.median == 7.5);
    CHECK(s.min == s.max);
  }
  SECTION("no samples is an error, not a zero") {
    CHECK_THROWS_AS(summarize({}), std::invalid_argument);
  }
}

TEST_CASE("gigabytes_per_second is bytes over time in units of 1e9 bytes per second") {
  CHECK(gigabytes_per_second(1e9, 1000.0) == Catch::Approx(1.0));
  CHECK(gigabytes_per_second(256.0 * 1024 * 1024, 0.1) == Catch::Approx(2684.35456));
  CHECK_THROWS_AS(gigabytes_per_second(1.0, 0.0), std::invalid_argument);
}

TEST_CASE("compare uses abs + rel tolerance and lists the first mismatches") {
  const std::vector<double> want{1.0, 2.0, 100.0, 0.0};
  SECTION("inside tolerance") {
    const std::vector<float> got{1.0f, 2.0000001f, 100.00001f, 1e-7f};
    CHECK(compare(got, want, Tolerance{1e-6, 1e-6}).ok());
  }
  SECTION("a mismatch is listed with its index, and the worst error is found") {
    const std::vector<double> got{1.0, 2.5, 100.0, 0.75};
    const Comparison c = compare(got, want, Tolerance{1e-6, 1e-6}, 1);
    CHECK(c.mismatches == 2);
    REQUIRE(c.first.size() == 1);
    CHECK(c.first[0].index == 1);
    CHECK(c.worst_index == 3);
    CHECK(c.worst_error == 0.75);
    CHECK_THAT(c.summary(), StartsWith("2 of 4 elements outside tolerance"));
  }
  SECTION("NaN never passes") {
    const std::vector<double> got{1.0, NAN, 100.0, 0.0};
    const Comparison c = compare(got, want, Tolerance{1e9, 1e9});
    CHECK(c.mismatches == 1);
    CHECK(std::isinf(c.worst_error));
  }
  SECTION("different lengths fail") {
    CHECK_FALSE(compare(std::vector<double>{1.0}, want, Tolerance{}).ok());
  }
}

TEST_CASE("CURAND_CHECK names the status; the host generator is seeded and reproducible") {
  CHECK_THROWS_WITH([] { CURAND_CHECK(CURAND_STATUS_LENGTH_NOT_MULTIPLE); }(),
                    ContainsSubstring("failed: CURAND_STATUS_LENGTH_NOT_MULTIPLE (105)"));
  std::vector<float> a(100000), b(100000);
  CurandGenerator(RngLocation::kHost, 7).normal(a.data(), a.size(), 0.0f, 1.0f);
  CurandGenerator(RngLocation::kHost, 7).normal(b.data(), b.size(), 0.0f, 1.0f);
  CHECK(a == b);
  double sum = 0.0, sum_sq = 0.0;
  for (float x : a) {
    sum += x;
    sum_sq += static_cast<double>(x) * x;
  }
  const double mean = sum / a.size();
  CHECK(std::fabs(mean) < 0.02);                                  // 5 sigma of the mean of 1e5 normals
  CHECK(std::fabs(std::sqrt(sum_sq / a.size() - mean * mean) - 1.0) < 0.02);
}

TEST_CASE("no-GPU reasons say what is missing") {
  CHECK(format_cuda_version(13000) == "13.0");
  CHECK(format_cuda_version(12040) == "12.4");
  CHECK_THAT(explain_no_gpu(cudaErrorInsufficientDriver, 0, 13000, nullptr),
             ContainsSubstring("no NVIDIA driver is installed"));
  CHECK(explain_no_gpu(cudaErrorInsufficientDriver, 12040, 13000, nullptr) ==
        "the driver supports CUDA 12.4 but this program was built with CUDA 13.0: update the driver");
  CHECK(explain_no_gpu(cudaErrorNoDevice, 13000, 13000, "") ==
        "no CUDA device is visible: CUDA_VISIBLE_DEVICES=\"\" hides them");
  CHECK(explain_no_gpu(cudaErrorNoDevice, 13000, 13000, "7") ==
        "no CUDA device is visible: CUDA_VISIBLE_DEVICES=\"7\" selects none that exists");
  CHECK(explain_no_gpu(cudaErrorNoDevice, 13000, 13000, nullptr) == "the driver found no CUDA device");
  CHECK_THAT(explain_no_gpu(cudaErrorUnknown, 13000, 13000, nullptr),
             StartsWith("cudaGetDeviceCount failed: cudaErrorUnknown"));
}

TEST_CASE("probe_gpus either finds devices or says why not") {
  const GpuAvailability gpus = probe_gpus();
  CHECK(gpus.runtime_version >= 12000);
  if (gpus.available()) {
    CHECK(gpus.reason.empty());
    CHECK(gpus.driver_version >= 12000);
  } else {
    CHECK_FALSE(gpus.reason.empty());
  }
}

TEST_CASE("a program without a usable GPU exits 77 with one line saying why") {
  const ProgramResult r = run_program({WORKBOOK_NEEDS_GPU_PROGRAM}, {{"CUDA_VISIBLE_DEVICES", ""}});
  CHECK(r.exit_code == kExitNoGpu);
  CHECK_THAT(r.err, StartsWith("workbook_needs_gpu needs a CUDA GPU: "));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  // It takes no arguments: --help says what it does, anything else is usage (before the GPU).
  const ProgramResult help = run_program({WORKBOOK_NEEDS_GPU_PROGRAM, "--help"});
  CHECK(help.exit_code == kExitOk);
  CHECK_THAT(help.out, StartsWith("workbook_needs_gpu: exit 0 when device 0 is usable"));
  check_one_line({WORKBOOK_NEEDS_GPU_PROGRAM, "--bogus"}, kExitUsage,
                 ContainsSubstring("workbook_needs_gpu takes no arguments, got '--bogus'"));
}

TEST_CASE("run_program kills a program that runs past its limit, and what it started") {
  const auto start = std::chrono::steady_clock::now();
  const ProgramResult r = run_program({"sh", "-c", "sleep 30 & sleep 30; echo never"}, {}, std::chrono::seconds(1));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.exit_code == 124);
  CHECK(seconds < 30.0);  // below the children's own sleep: killed at the limit, not waited for
  CHECK_THAT(r.err, ContainsSubstring("killed after 1 s"));
  CHECK(r.out.empty());
  CHECK(run_program({"sh", "-c", "exit 3"}).exit_code == 3);
  CHECK(run_program({"/nonexistent/program"}).exit_code == 127);
}

TEST_CASE("guarded_main maps each kind of failure to its exit code") {
  CHECK(guarded_main("t", [] { return 0; }) == kExitOk);
  CHECK(guarded_main("t", []() -> int { throw UsageError("--n must be at least 1, got 0"); }) == kExitUsage);
  CHECK(guarded_main("t", []() -> int { throw NoGpuError("none"); }) == kExitNoGpu);
  CHECK(guarded_main("t", []() -> int { CUDA_CHECK(cudaErrorInvalidValue); return 0; }) == kExitFailure);
  CHECK(guarded_main("t", []() -> int { throw std::runtime_error("boom"); }) == kExitFailure);
}

namespace {

// Runs parse_command_line on a list of arguments, as main would.
std::optional<int> parse(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_command_line(app, static_cast<int>(argv.size()), argv.data());
}

// Captures what a block writes to std::cout and std::cerr.
struct CapturedStreams {
  std::ostringstream out, err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  ~CapturedStreams() {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
  }
};

}  // namespace

TEST_CASE("common flags parse, and bad ones map to exit code 2") {
  CLI::App app{"test"};
  CommonOptions options;
  add_common_options(app, options);
  CapturedStreams captured;

  SECTION("defaults") {
    CHECK_FALSE(parse(app, {}).has_value());
    CHECK(options.device == 0);
    CHECK_FALSE(options.json.has_value());
    CHECK_FALSE(options.quick);
  }
  SECTION("--json alone means stdout") {
    CHECK_FALSE(parse(app, {"--json", "--quick", "--device", "1"}).has_value());
    CHECK(options.json == "-");
    CHECK(options.quick);
    CHECK(options.device == 1);
  }
  SECTION("--json FILE") {
    CHECK_FALSE(parse(app, {"--json", "out.json"}).has_value());
    CHECK(options.json == "out.json");
  }
  SECTION("--json into a folder that does not exist exits 2 before the run") {
    CHECK(parse(app, {"--json", "/no/such/folder/out.json"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("the folder '/no/such/folder' does not exist"));
  }
  SECTION("--json naming a folder exits 2 before the run") {
    CHECK(parse(app, {"--json", "."}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("--json .: is a folder; name the file to write (e.g. ./out.json)"));
  }
  SECTION("--json naming anything but a .json file exits 2 before the run (a slip cannot overwrite a source)") {
    CHECK(parse(app, {"--json", "README.md"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("--json README.md: name a .json file (it is overwritten)"));
  }
  SECTION("--json where nothing can be created exits 2 before the run") {
    CHECK(parse(app, {"--json", "/proc/self/out.json"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("--json /proc/self/out.json: cannot be written"));
  }
  SECTION("--help exits 0") { CHECK(parse(app, {"--help"}) == kExitOk); }
  SECTION("a flag given a value exits 2, in a subcommand too (CLI11 alone would read --quick=3 as --quick)") {
    CHECK(parse(app, {"--quick=3"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), StartsWith("error: --quick takes no value, got '--quick=3' (see prog --help)"));
    bool on = false;
    app.add_subcommand("dp")->add_flag("--on-chip", on, "on chip");
    CHECK(parse(app, {"dp", "--on-chip=yes"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("error: --on-chip takes no value, got '--on-chip=yes'"));
    CHECK_FALSE(parse(app, {"--json=out.json"}).has_value());  // an option's value after = is still read
    CHECK(options.json == "out.json");
  }
  SECTION("unknown flag exits 2 with one line") {
    CHECK(parse(app, {"--bogus"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), StartsWith("error: ") && ContainsSubstring("--bogus"));
  }
  SECTION("a value that is not a number exits 2") { CHECK(parse(app, {"--device", "x"}) == kExitUsage); }
  SECTION("CLI11's messages for the common mistakes are put in the workbook's words") {
    int count = 0;
    double rate = 0.0;
    app.add_option("--count", count, "a count");
    app.add_option("--rate", rate, "a rate");
    CHECK(parse(app, {"--count", "1.5"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), StartsWith("error: --count: '1.5' is not a whole number (see prog --help)"));
    CHECK(parse(app, {"--rate", "abc"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("error: --rate: 'abc' is not a number"));
    CHECK(parse(app, {"--count", "1K"}) == kExitUsage);  // a size where a plain number goes
    CHECK_THAT(captured.err.str(),
               ContainsSubstring("error: --count: '1K' is not a number here (K, M and G are for sizes, such as --points 5M)"));
    CHECK(parse(app, {"--rate"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("error: --rate needs a value"));
    CHECK(parse(app, {"--bogus", "x"}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("error: unexpected arguments: --bogus x"));
  }
  SECTION("numbers are decimal: hex, octal, binary and leading zeros are refused, whatever the flag") {
    int count = 0;
    double rate = 0.0;
    app.add_option("--count", count, "a count");
    app.add_option("--rate", rate, "a rate");
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--rate", "0x10"}, {"--rate=0x1p3"}, {"--count", "010"}, {"--count=+0b11"}, {"--count", "0o17"},
             {"--rate", "-0x1p3"}, {"--rate", "00.5"}}) {
      CAPTURE(args);
      CHECK(parse(app, args) == kExitUsage);
      const std::size_t equals = args[0].find('=');
      const std::string flag = args[0].substr(0, equals);
      const std::string value = equals == std::string::npos ? args[1] : args[0].substr(equals + 1);
      CHECK_THAT(captured.err.str(), ContainsSubstring("error: " + flag + ": '" + value + "' is not a decimal number"));
    }
    CHECK_FALSE(parse(app, {"--count", "0", "--rate", "0.01"}).has_value());  // a zero, and 0.01, are decimal
    CHECK(rate == 0.01);
    CHECK_FALSE(parse(app, {"--rate", "-0.5"}).has_value());
    CHECK(rate == -0.5);
    // Values that only start like a number, such as a chapter's paths, are not numbers.
    CHECK_FALSE(parse(app, {"--json", "04_out.json"}).has_value());
    CHECK_FALSE(parse(app, {"--json=01.json"}).has_value());
  }
  SECTION("--device takes N, cuda and cuda:N") {
    CHECK_FALSE(parse(app, {"--device", "cuda:3"}).has_value());
    CHECK(options.device == 3);
    CHECK_FALSE(parse(app, {"--device", "cuda"}).has_value());
    CHECK(options.device == 0);
  }
  SECTION("a malformed --device exits 2 with one line naming the forms") {
    CHECK(parse(app, {"--device", "cuda:"}) == kExitUsage);
    const std::string err = captured.err.str();
    CHECK_THAT(err, StartsWith("error: --device must be N, cuda or cuda:N") && ContainsSubstring("got 'cuda:'"));
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  }
}

TEST_CASE("a size option takes K, M and G and refuses anything else with one line") {
  CLI::App app{"test"};
  std::int64_t points = 7;
  int mib = 1;
  add_size_option(app, "--points", points, "points");
  add_size_option(app, "--mib", mib, "MiB");
  CapturedStreams captured;
  CHECK_FALSE(parse(app, {"--points", "50K", "--mib", "64"}).has_value());
  CHECK(points == 50'000);
  CHECK(mib == 64);
  CHECK(app.count("--points") == 1);
  CHECK(parse(app, {"--points", "5X"}) == kExitUsage);
  CHECK_THAT(captured.err.str(), StartsWith("error: --points: '5X' is not a size"));
  CHECK(parse(app, {"--mib", "3G"}) == kExitUsage);  // 3e9 does not fit an int
  CHECK_THAT(captured.err.str(), ContainsSubstring("--mib must be at most 2147483647, got 3G"));
}

TEST_CASE("a seed is digits only: -1 is refused, not wrapped to 2^64 - 1") {
  CLI::App app{"test"};
  std::uint64_t seed = 42;
  add_seed_option(app, seed, "seed");
  CapturedStreams captured;
  CHECK_FALSE(parse(app, {"--seed", "18446744073709551615"}).has_value());
  CHECK(seed == 18446744073709551615ull);
  for (const char* bad : {"-1", "", "1.5", "0x10", "5K", "18446744073709551616"}) {
    CAPTURE(bad);
    CHECK(parse(app, {"--seed", bad}) == kExitUsage);
    CHECK_THAT(captured.err.str(), ContainsSubstring("--seed must be"));
  }
}

TEST_CASE("sizes: digits with an optional K, M or G, decimal, and nothing else") {
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("5000") == 5'000);
  CHECK(parse_size("50K") == 50'000);
  CHECK(parse_size("5M") == 5'000'000);
  CHECK(parse_size("2G") == 2'000'000'000);
  CHECK(parse_size("60G") == 60'000'000'000);
  CHECK(parse_size("9223372036854775807") == INT64_MAX);
  for (const char* bad : {"", "K", "-1", "+5", "5.5M", "5e6", "0x10", "007", "50k", "5m", "2g", " 5", "5 ", "5KB", "5T", "5MM", "1,000",
                          "9223372036854775808", "9223372036854775807K", "10000000000G"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_size(bad).has_value());
  }
  CHECK_THROWS_WITH(size_value("--points", "50X"),
                    "--points: '50X' is not a size (use digits with an optional K, M or G: 5000, 50K, 5M)");
}

TEST_CASE("list flags refuse empty lists, empty items and items out of range, naming the flag") {
  CHECK(list_items("--streams", "1,2,4") == std::vector<std::string>{"1", "2", "4"});
  for (const char* bad : {"1,,2", ",1", "1,", ","}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(list_items("--streams", bad), StartsWith("--streams: '") && ContainsSubstring("empty item"));
  }
  CHECK_THROWS_WITH(list_items("--streams", ""), "--streams needs at least one value");
  CHECK(parse_size_list("--sizes", "500,5K,5M", 2, 2'000'000'000) == std::vector<std::int64_t>{500, 5'000, 5'000'000});
  CHECK_THROWS_WITH(parse_size_list("--sizes", "5K,1", 2, 100), "--sizes must be at most 100, got 5000");
  CHECK_THROWS_WITH(parse_size_list("--sizes", "1", 2, 100), "--sizes must be at least 2, got 1");
  CHECK_THROWS_WITH(parse_size_list("--sizes", "5Q", 2, 100), StartsWith("--sizes: '5Q' is not a size"));
  CHECK(parse_int_list("--streams", "1,2,8", 1, 64) == std::vector<int>{1, 2, 8});
  CHECK_THROWS_WITH(parse_int_list("--streams", "1,2K", 1, 64), StartsWith("--streams: '2K' is not a whole number"));
  CHECK_THROWS_WITH(parse_int_list("--streams", "1,0", 1, 64), "--streams must be at least 1, got 0");
  CHECK_THROWS_WITH(parse_int_list("--streams", "1,,2", 1, 64), StartsWith("--streams: '1,,2' has an empty item"));
  CHECK_THROWS_WITH(parse_int_list("--streams", "4,2,4", 1, 64), "--streams: '4,2,4' lists 4 twice");
  CHECK_THROWS_WITH(parse_size_list("--sizes", "5K,5000", 2, 100'000), "--sizes: '5K,5000' lists 5000 twice");
}

TEST_CASE("device flag forms: N, cuda, cuda:N, and cpu where a program runs on the CPU") {
  CHECK(parse_device("0").index == 0);
  CHECK(parse_device("7").index == 7);
  CHECK(parse_device("cuda").index == 0);
  CHECK(parse_device("cuda:2").index == 2);
  CHECK(parse_device("cuda:2").name() == "cuda:2");
  CHECK_FALSE(parse_device("cuda:2").cpu);
  CHECK(parse_device("cpu", CpuDevice::kAllowed).cpu);
  CHECK(parse_device("cpu", CpuDevice::kAllowed).name() == "cpu");
  CHECK_THROWS_WITH(parse_device("cpu"), "--device must be N, cuda or cuda:N (e.g. 0 or cuda:1), got 'cpu'");
  CHECK_THROWS_WITH(parse_device("gpu", CpuDevice::kAllowed),
                    "--device must be cpu, N, cuda or cuda:N (e.g. 0 or cuda:1), got 'gpu'");
  for (const char* bad : {"", "-1", "+1", "01", "cuda:01", "cuda:", "cuda:-1", "cuda:x", "cuda1", "CUDA:0", "1.0", " 1",
                          "0x1", "cuda:1:2", "9999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_device(bad, CpuDevice::kAllowed), UsageError);
  }
}

TEST_CASE("a device index that does not exist is named with the devices that do") {
  CHECK(missing_device_message(5, {"NVIDIA H200"}) ==
        "--device 5: cudaErrorInvalidDevice: invalid device ordinal; this machine has 1 device: 0 (NVIDIA H200)");
  CHECK_THAT(missing_device_message(2, {"A", "B"}), EndsWith("this machine has 2 devices: 0 (A), 1 (B)"));
}

TEST_CASE("byte counts saturate instead of wrapping, and the memory line says what and how much") {
  ByteCount need;
  need.add(1'000, sizeof(float), 3).add(10, sizeof(double));
  CHECK(need.bytes() == 12'080);
  CHECK_FALSE(need.saturated());
  need.add(-5, 4);  // nothing
  CHECK(need.bytes() == 12'080);
  ByteCount huge;
  huge.add(INT64_MAX, sizeof(float), 2);
  CHECK(huge.saturated());
  CHECK(huge.bytes() == SIZE_MAX);
  ByteCount sum(SIZE_MAX - 1);
  CHECK(sum.add(ByteCount(2)).saturated());
  CHECK(ByteCount(5).add(huge).saturated());

  ByteCount run;
  run.add(60'000'000'000, sizeof(float), 3);  // 720e9 bytes = 686645.5 MiB
  CHECK(gpu_memory_shortfall("--points 60000000000", run, std::size_t{80'000} << 20, std::size_t{81'559} << 20, 1) ==
        "--points 60000000000 needs 686645.5 MiB of GPU memory, but only 80000.0 MiB of 81559.0 MiB are free on "
        "device 1");
  CHECK_THAT(gpu_memory_shortfall("--points 9223372036854775807", huge, 0, 0, 0),
             ContainsSubstring("needs more than 16 EiB (its byte count overflows 64 bits) of GPU memory"));
}

TEST_CASE("host memory: the shortfall line, and a size no machine holds refused before allocating") {
  ByteCount need;
  need.add(3'000'000'000, sizeof(float), 4);
  CHECK(host_memory_shortfall("--points 3000000000", need, std::size_t{20'000} << 20, std::size_t{24'000} << 20) ==
        "--points 3000000000 needs 45776.4 MiB of host memory, but only 20000.0 MiB of 24000.0 MiB are available");
  CHECK(available_host_memory() > 0);
  CHECK_NOTHROW(require_host_memory("a little", ByteCount().add(1, 1024)));
  CHECK_THROWS_AS(require_host_memory("--points 100G", ByteCount().add(100'000'000'000, sizeof(float), 4)),
                  HostMemoryError);
  ByteCount huge;
  huge.add(std::numeric_limits<std::int64_t>::max(), 16);
  CHECK_THROWS_WITH(require_host_memory("--points 9223372036854775807", huge),
                    Catch::Matchers::ContainsSubstring("more than 16 EiB"));
}

TEST_CASE("require_gpu_memory refuses what does not fit with one line, before any allocation", "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  CHECK_NOTHROW(require_gpu_memory("a small buffer", ByteCount(1 << 20)));
  ByteCount too_much;
  too_much.add(1, std::size_t{1} << 50);  // 1 PiB
  CHECK_THROWS_AS(require_gpu_memory("--points 1", too_much), GpuMemoryError);
  CHECK_THROWS_WITH(require_gpu_memory("--points 1", too_much),
                    StartsWith("--points 1 needs 1073741824.0 MiB of GPU memory, but only ") &&
                        EndsWith(" are free on device 0"));
}

TEST_CASE("range checks say the flag, the limit and the value") {
  CHECK_NOTHROW(require_at_least("--points", 2L, 2L));
  try {
    require_at_least("--points", -1L, 2L);
    FAIL("no throw");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "--points must be at least 2, got -1");
  }
  CHECK_THROWS_WITH(require_at_most("--size", 9, 8), "--size must be at most 8, got 9");
  CHECK_THROWS_WITH(require_positive("--lr", 0.0), "--lr must be a finite number greater than 0, got 0");
  CHECK_THROWS_AS(require_positive("--lr", NAN), UsageError);
  CHECK_THROWS_AS(require_positive("--lr", INFINITY), UsageError);
  CHECK_NOTHROW(require_positive("--lr", 0.01));
}

TEST_CASE("split_commas keeps empty parts, so that a list flag can refuse them") {
  using V = std::vector<std::string>;
  CHECK(split_commas("1,2,4") == V{"1", "2", "4"});
  CHECK(split_commas("5M") == V{"5M"});
  CHECK(split_commas("") == V{});
  CHECK(split_commas("1,,2") == V{"1", "", "2"});
  CHECK(split_commas("1,") == V{"1", ""});
  CHECK(split_commas(",1") == V{"", "1"});
}

TEST_CASE("Report prints PASS or FAIL last and writes the JSON object") {
  CapturedStreams captured;
  SECTION("passing run with a JSON file") {
    const std::string path = temp_path("report.json");
    Report report("demo", path);
    report.json()["answer"] = 42;
    report.out() << "a human line\n";
    report.check(true, "never shown");
    CHECK(report.finish() == kExitOk);
    CHECK(last_line(captured.out.str()) == "PASS");
    const nlohmann::json j = read_json(path);
    CHECK(j["program"] == "demo");
    CHECK(j["answer"] == 42);
    CHECK(j["passed"] == true);
    CHECK(j["failures"].empty());
    std::remove(path.c_str());
  }
  SECTION("failing run names the first failure and counts the rest") {
    Report report("demo", std::nullopt);
    report.check(false, "w differs from the reference");
    report.check(false, "b differs from the reference");
    CHECK(report.finish() == kExitFailure);
    CHECK(last_line(captured.out.str()) == "FAIL: w differs from the reference (and 1 more)");
  }
  SECTION("JSON on stdout moves the human report to stderr") {
    Report report("demo", std::string("-"));
    report.out() << "human\n";
    CHECK(report.finish() == kExitOk);
    CHECK(nlohmann::json::parse(captured.out.str())["passed"] == true);
    CHECK(last_line(captured.err.str()) == "PASS");
  }
  SECTION("an unwritable JSON path is an error") {
    Report report("demo", std::string("/nonexistent-dir/x.json"));
    CHECK_THROWS_WITH(report.finish(), StartsWith("cannot write --json file '/nonexistent-dir/x.json'"));
  }
}

TEST_CASE("a report starts with its provenance line and writes the same record as \"provenance\"") {
  CapturedStreams captured;
  const std::string path = temp_path("provenance.json");
  Report report("demo", path);
  CHECK(report.finish() == kExitOk);
  const std::string first_line = captured.out.str().substr(0, captured.out.str().find('\n') + 1);
  const nlohmann::json p = read_json(path)["provenance"];
  CHECK(first_line == provenance_line(p));
  CHECK_THAT(first_line, StartsWith("# provenance: commit "));
  for (const char* key : {"commit", "tree", "gpus", "driver", "cuda_runtime", "cuda_toolkit", "libraries", "host", "run",
                          "date", "command"}) {
    CAPTURE(key);
    CHECK(p.contains(key));
  }
  CHECK(p["gpus"].is_array());  // empty on a machine without a GPU: a record never fails a run
  CHECK(p["date"].get<std::string>().size() == 20);  // 2026-11-28T06:10:00Z
  std::remove(path.c_str());
}

TEST_CASE("provenance: the command line as typed, workbook paths from its root, odd words quoted") {
  std::string program = "prog", flag = "--title", title = "it's two words", json = "--json";
  std::string file = (std::filesystem::current_path() / "x.json").string();
  char* argv[] = {program.data(), flag.data(), title.data(), json.data(), file.data()};
  record_command_line(5, argv);
  note_library("nccl", "2.28.3");
  const nlohmann::json p = provenance();
  CHECK_THAT(p["command"].get<std::string>(), StartsWith("prog --title 'it'\"'\"'s two words' --json "));
  CHECK(p["libraries"]["nccl"] == "2.28.3");
  CHECK_THAT(provenance_line(p), ContainsSubstring(", nccl 2.28.3, host "));
  CHECK_THAT(provenance_line(p), EndsWith(": " + p["command"].get<std::string>() + "\n"));
}

TEST_CASE("an empty DeviceBuffer makes no CUDA call") {
  DeviceBuffer<float> empty(0);
  CHECK(empty.data() == nullptr);
  CHECK(empty.bytes() == 0);
  DeviceBuffer<float> moved = std::move(empty);
  CHECK(moved.empty());
  moved = DeviceBuffer<float>(0);
  CHECK(moved.empty());
}

TEST_CASE("a buffer whose byte count would overflow is refused before any allocation") {
  CHECK_THROWS_AS(DeviceBuffer<double>(SIZE_MAX / 4), std::length_error);
  CHECK_THROWS_AS(PinnedBuffer<int>(SIZE_MAX / 2), std::length_error);
}

TEST_CASE("device and pinned buffers round-trip data and move ownership", "[gpu]") {
  require_gpus(1);
  const std::size_t n = 1000003;
  PinnedBuffer<int> host(n);
  for (std::size_t i = 0; i < n; ++i) host.data()[i] = static_cast<int>(i * 2654435761u);
  DeviceBuffer<int> device(n);
  CUDA_CHECK(cudaMemcpy(device.data(), host.data(), device.bytes(), cudaMemcpyHostToDevice));
  DeviceBuffer<int> owner = std::move(device);
  CHECK(device.data() == nullptr);
  std::vector<int> back(n, -1);
  CUDA_CHECK(cudaMemcpy(back.data(), owner.data(), owner.bytes(), cudaMemcpyDeviceToHost));
  CHECK(std::equal(back.begin(), back.end(), host.data()));
}

TEST_CASE("move assignment frees the old resource and leaves the source empty", "[gpu]") {
  require_gpus(1);
  DeviceBuffer<int> a(16), b(32);
  const int* b_data = b.data();
  a = std::move(b);
  CHECK(a.data() == b_data);
  CHECK(a.size() == 32);
  CHECK(b.data() == nullptr);
  CHECK(b.size() == 0);

  Stream s1, s2;
  const cudaStream_t s2_handle = s2.get();
  s1 = std::move(s2);
  CHECK(s1.get() == s2_handle);
  CHECK(s2.get() == nullptr);
  s1.synchronize();

  Event e1, e2(EventTiming::kEnabled);
  const cudaEvent_t e2_handle = e2.get();
  e1 = std::move(e2);
  CHECK(e1.get() == e2_handle);
  CHECK(e2.get() == nullptr);
  e1.record(s1.get());
  e1.synchronize();
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("time_on_stream times every repeat with events", "[gpu]") {
  require_gpus(1);
  Stream stream;
  DeviceBuffer<char> a(64 << 20), b(64 << 20);
  CUDA_CHECK(cudaMemsetAsync(a.data(), 1, a.bytes(), stream.get()));
  const Stats t = time_on_stream(stream.get(), Repeats{2, 9}, [&] {
    CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), a.bytes(), cudaMemcpyDeviceToDevice, stream.get()));
  });
  CHECK(t.count == 9);
  CHECK(t.min > 0.0);
  CHECK(t.min <= t.median);
  CHECK(t.median <= t.max);
}

TEST_CASE("use_device names the devices that exist when the index is wrong", "[gpu]") {
  require_gpus(1);
  CHECK_NOTHROW(use_device(0));
  CHECK_THROWS_WITH(use_device(999), StartsWith("--device 999: cudaErrorInvalidDevice: invalid device ordinal; "
                                                "this machine has "));
}

TEST_CASE("the pretended compute capability: MAJOR.MINOR, only ever lower, malformed refused") {
  CHECK(parse_compute_capability("8.0") == ComputeCapability{8, 0});
  CHECK(parse_compute_capability("8.9") == ComputeCapability{8, 9});
  CHECK(parse_compute_capability("10.0") == ComputeCapability{10, 0});
  for (const char* bad : {"", "8", "8.", ".0", "eight", "8.0a", " 8.0", "8,0", "-8.0", "80", "8.10", "100.0", "8.0.0"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(parse_compute_capability(bad),
                      std::string("WORKBOOK_PRETEND_COMPUTE_CAPABILITY must be MAJOR.MINOR, e.g. 8.0, got '") + bad + "'");
  }
  const ComputeCapability hopper{9, 0};
  CHECK(effective_compute_capability(hopper, nullptr) == hopper);
  CHECK(effective_compute_capability(hopper, "") == hopper);  // empty counts as unset
  CHECK(effective_compute_capability(hopper, "8.0") == ComputeCapability{8, 0});
  CHECK(effective_compute_capability(hopper, "8.9") == ComputeCapability{8, 9});
  CHECK(effective_compute_capability(hopper, "9.0") == hopper);
  CHECK(effective_compute_capability(ComputeCapability{8, 6}, "9.0") == ComputeCapability{8, 6});  // never newer
  CHECK_THROWS_AS(effective_compute_capability(hopper, "9"), UsageError);
  CHECK(ComputeCapability{8, 9}.text() == "8.9");
  CHECK(hopper.at_least(9, 0));
  CHECK(hopper.at_least(8, 9));
  CHECK_FALSE(ComputeCapability{8, 9}.at_least(9, 0));
  CHECK(ComputeCapability{10, 0}.at_least(9, 0));
}

TEST_CASE("device_compute_capability is the device's own when the variable is unset", "[gpu]") {
  require_gpus(1);
  int major = 0, minor = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess);
  const char* set = std::getenv(kPretendCapabilityVariable);
  if (set != nullptr && *set != '\0') SKIP(kPretendCapabilityVariable << " is set in this environment");
  CHECK(device_compute_capability(0) == ComputeCapability{major, minor});
  CHECK_FALSE(compute_capability_is_pretended(0));
}

TEST_CASE("chrome trace: valid JSON, one event per operation, one track per stream") {
  const std::vector<std::string> tracks{"K=2: stream 0", "K=2: stream 1"};
  const std::vector<TraceOp> ops{{"H2D 0", "copy_in", 0, 0.0, 10.0},
                                 {"compute 0", "compute", 0, 10.0, 12.5},
                                 {"D2H 0", "copy_out", 0, 22.5, 9.0},
                                 {"H2D 1", "copy_in", 1, 10.0, 10.0}};
  const nlohmann::json parsed = nlohmann::json::parse(chrome_trace(ops, tracks).dump());
  REQUIRE(parsed.contains("traceEvents"));
  std::vector<nlohmann::json> complete;
  std::set<int> named_tracks;
  for (const auto& e : parsed["traceEvents"]) {
    if (e["ph"] == "X") complete.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") named_tracks.insert(e["tid"].get<int>());
  }
  REQUIRE(complete.size() == ops.size());
  CHECK(named_tracks == std::set<int>{0, 1});
  for (std::size_t i = 0; i < ops.size(); ++i) {
    CAPTURE(i);
    CHECK(complete[i]["name"] == ops[i].name);
    CHECK(complete[i]["cat"] == ops[i].category);
    CHECK(complete[i]["tid"] == ops[i].track);
    CHECK(complete[i]["ts"].get<double>() == ops[i].start_us);
    CHECK(complete[i]["dur"].get<double>() == ops[i].duration_us);
  }

  SECTION("an op on a missing track is an error") {
    CHECK_THROWS_AS(workbook::chrome_trace({{"H2D 9", "copy_in", 2, 0.0, 1.0}}, tracks), std::invalid_argument);
  }
  SECTION("the file written parses back") {
    const std::string path = temp_path("trace.json");
    write_chrome_trace(path, ops, tracks);
    CHECK(read_json(path)["traceEvents"].size() == parsed["traceEvents"].size());
    std::remove(path.c_str());
  }
}

TEST_CASE("overlap shares: copy and compute busy, idle and copy hidden, from synthetic intervals") {
  using Catch::Approx;
  auto copy = [](double start, double duration, int track = 0) { return TraceOp{"H2D", "copy_in", track, start, duration}; };
  auto step = [](double start, double duration, int track = 1) { return TraceOp{"step", "compute", track, start, duration}; };
  // Every share is of the wall; busy time is the union of copies and compute, so these add to 1.
  auto adds_up = [](const OverlapShares& s) {
    CHECK(s.copy_busy + s.compute_busy - s.copy_hidden * s.copy_busy + s.idle == Approx(1.0));
  };

  SECTION("one stream: copy, step, copy, step back to back, nothing hidden, nothing idle") {
    const OverlapShares s = overlap_shares({copy(0, 10, 0), step(10, 10, 0), copy(20, 10, 0), step(30, 10, 0)});
    CHECK(s.wall_us == Approx(40.0));
    CHECK(s.copy_busy == Approx(0.5));
    CHECK(s.compute_busy == Approx(0.5));
    CHECK(s.idle == Approx(0.0).margin(1e-12));
    CHECK(s.copy_hidden == Approx(0.0).margin(1e-12));  // touching ends are not overlap
    adds_up(s);
  }
  SECTION("two streams: the next copy under the step, half of the copy time hidden") {
    const OverlapShares s = overlap_shares({copy(0, 10), step(10, 10), copy(10, 10), step(20, 10)});
    CHECK(s.wall_us == Approx(30.0));
    CHECK(s.copy_busy == Approx(20.0 / 30));
    CHECK(s.compute_busy == Approx(20.0 / 30));
    CHECK(s.idle == Approx(0.0).margin(1e-12));
    CHECK(s.copy_hidden == Approx(0.5));
    adds_up(s);
  }
  SECTION("a gap where neither runs is idle; the input order does not matter") {
    const OverlapShares s = overlap_shares({step(20, 10), copy(0, 10)});
    CHECK(s.wall_us == Approx(30.0));
    CHECK(s.copy_busy == Approx(1.0 / 3));
    CHECK(s.compute_busy == Approx(1.0 / 3));
    CHECK(s.idle == Approx(1.0 / 3));
    CHECK(s.copy_hidden == Approx(0.0).margin(1e-12));
    adds_up(s);
  }
  SECTION("overlapping copies (x and y, two tracks) count once; copies inside a long step are all hidden") {
    const OverlapShares s = overlap_shares({step(0, 100), copy(10, 10, 0), copy(15, 10, 2), copy(50, 5)});
    CHECK(s.wall_us == Approx(100.0));
    CHECK(s.copy_busy == Approx(0.2));  // [10, 25) and [50, 55)
    CHECK(s.compute_busy == Approx(1.0));
    CHECK(s.idle == Approx(0.0).margin(1e-12));
    CHECK(s.copy_hidden == Approx(1.0));
    adds_up(s);
  }
  SECTION("one step across several copies: the shared time is summed span by span") {
    const OverlapShares s = overlap_shares({copy(0, 10), copy(20, 10), copy(40, 10), step(5, 40)});
    CHECK(s.wall_us == Approx(50.0));
    CHECK(s.copy_hidden == Approx(20.0 / 30));  // [5, 10), [20, 30), [40, 45)
    CHECK(s.idle == Approx(0.0).margin(1e-12));
    adds_up(s);
  }
  SECTION("other categories are left out, of the wall too; the categories can be named") {
    const OverlapShares s = overlap_shares({copy(0, 10), step(10, 10), {"D2H", "copy_out", 0, 20, 100}});
    CHECK(s.wall_us == Approx(20.0));
    CHECK(s.idle == Approx(0.0).margin(1e-12));
    const OverlapShares out = overlap_shares({copy(0, 10), step(10, 10), {"D2H", "copy_out", 0, 15, 10}}, "copy_out");
    CHECK(out.wall_us == Approx(15.0));
    CHECK(out.copy_busy == Approx(10.0 / 15));
    CHECK(out.copy_hidden == Approx(0.5));
  }
  SECTION("edge cases: no ops, only instants, only copies, a negative duration") {
    const OverlapShares none = overlap_shares({});
    CHECK(none.wall_us == 0.0);
    CHECK(none.copy_busy == 0.0);
    CHECK(none.idle == 0.0);
    CHECK(none.copy_hidden == 0.0);
    const OverlapShares instants = overlap_shares({copy(5, 0), step(5, 0)});
    CHECK(instants.wall_us == 0.0);
    CHECK(instants.compute_busy == 0.0);
    const OverlapShares copies = overlap_shares({copy(0, 10), copy(20, 10)});
    CHECK(copies.copy_busy == Approx(20.0 / 30));
    CHECK(copies.compute_busy == 0.0);
    CHECK(copies.idle == Approx(10.0 / 30));
    CHECK(copies.copy_hidden == 0.0);
    adds_up(copies);
    const OverlapShares steps = overlap_shares({step(0, 10)});
    CHECK(steps.compute_busy == Approx(1.0));
    CHECK(steps.copy_hidden == 0.0);  // no copy time to hide
    const OverlapShares negative = overlap_shares({copy(0, 10), step(10, -3)});
    CHECK(negative.wall_us == Approx(10.0));
    CHECK(negative.compute_busy == 0.0);
  }
}

TEST_CASE("table: the printed text and the JSON rows come from the same cells") {
  Table t({{"name", "variant"}, {"ms", "ms", 3}, {"err", "err", 1, Column::Style::kScientific}, {"hidden", ""}});
  t.add_row().set("name", "4 last_block").set("ms", 1.52749).set("err", 1.234e-7).set("hidden", 7);
  t.add_row().set("name", "7 persistent");  // unset cells: blank, and absent from the JSON
  std::ostringstream out;
  t.print(out, "  ");
  CHECK(out.str() ==
        "  variant          ms      err\n"
        "  4 last_block  1.527  1.2e-07\n"
        "  7 persistent\n");

  // A row that stops early but sets the last column prints that cell right after its own.
  Table s({{"name", "variant"}, {"ms", "ms", 3}, {"check", "check"}});
  s.add_row().set("name", "4 last_block").set("ms", 1.5).set("check", "ok");
  s.add_row().set("name", "7 persistent").set("check", "skipped: no clusters");
  std::ostringstream skipped;
  s.print(skipped, "");
  CHECK(skipped.str() ==
        "variant          ms  check\n"
        "4 last_block  1.500  ok\n"
        "7 persistent  skipped: no clusters\n");
  const nlohmann::json j = t.json();
  REQUIRE(j.size() == 2);
  CHECK(j[0]["ms"].get<double>() == 1.52749);  // unrounded
  CHECK(j[0]["hidden"] == 7);
  CHECK_FALSE(j[1].contains("ms"));
  CHECK_THROWS_AS(t.add_row().set("typo", 1), std::logic_error);
}

TEST_CASE("table: a measured time is one {median, min, max, runs} cell, printed as four columns") {
  const Stats stats = summarize({1.6021, 1.5190, 1.5274});
  CHECK(timing(stats) == nlohmann::json{{"median", 1.5274}, {"min", 1.519}, {"max", 1.6021}, {"runs", 3}});
  Table t({{"name", "variant"}, {"time_ms", "ms", 3, Column::Style::kTiming}, {"check", "check"}});
  t.add_row().set("name", "4 last_block").set("time_ms", timing(stats)).set("check", "ok");
  t.add_row().set("name", "7 persistent").set("check", "skipped");
  std::ostringstream out;
  t.print(out, "");
  CHECK(out.str() ==
        "variant          ms    min    max  runs  check\n"
        "4 last_block  1.527  1.519  1.602     3  ok\n"
        "7 persistent  skipped\n");
  CHECK(t.json()[0]["time_ms"]["runs"] == 3);
  CHECK_FALSE(t.json()[1].contains("time_ms"));
  // A timing column takes only a timing, and a timing goes only in a timing column.
  CHECK_THROWS_AS(t.add_row().set("time_ms", 1.5), std::logic_error);
  CHECK_THROWS_AS(t.add_row().set("check", timing(stats)), std::logic_error);
}

TEST_CASE("table: byte counts in binary units, and a wide table printed turned") {
  Table t({{"name", "name"}, {"memory", "global memory", -1, Column::Style::kBytes}, {"sms", "SMs"}, {"id", ""},
           {"unset", "never set"}});
  t.add_row().set("name", "NVIDIA H200").set("memory", 150'754'820'096ULL).set("sms", 132).set("id", 0);
  t.add_row().set("name", "GPU").set("memory", 52'428'800).set("sms", 2).set("id", 1);
  std::ostringstream out;
  t.print_turned(out, "  ");
  CHECK(out.str() ==
        "  name           NVIDIA H200  GPU\n"
        "  global memory  140.40 GiB   50.0 MiB\n"
        "  SMs            132          2\n");
  Table small({{"b", "bytes", -1, Column::Style::kBytes}});
  small.add_row().set("b", 1000);
  small.add_row().set("b", 1536);
  std::ostringstream bytes;
  small.print(bytes, "");
  CHECK(bytes.str() == "  bytes\n 1000 B\n1.5 KiB\n");
  CHECK(t.json()[0]["memory"] == 150'754'820'096ULL);  // the JSON keeps the count
}

TEST_CASE("format_bytes: the largest binary unit that divides the count") {
  CHECK(format_bytes(12) == "12 B");
  CHECK(format_bytes(8 << 10) == "8 KiB");
  CHECK(format_bytes(64 << 20) == "64 MiB");
  CHECK(format_bytes(std::size_t{1} << 30) == "1 GiB");
  CHECK(format_bytes((64 << 20) + 1) == std::to_string((64 << 20) + 1) + " B");
  CHECK(format_size(1000) == "1000 B");
  CHECK(format_size(1536) == "1.5 KiB");
  CHECK(format_size(50.0 * 1024 * 1024) == "50.0 MiB");
  CHECK(format_size(150'754'820'096.0) == "140.40 GiB");
}

TEST_CASE("median and relative error, including the edge cases") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 2.0, 3.0}) == 2.5);
  CHECK_THROWS_AS(median({}), std::invalid_argument);
  CHECK(relative_error(1.1, 1.0) == Catch::Approx(0.1));
  CHECK(relative_error(0.5, 0.0) == 0.5);  // no relative error exists: the absolute one
}

TEST_CASE("regression check: tolerances, every epoch's loss, divergence only where the reference diverges") {
  using namespace workbook::regression;
  TrainingResult want;
  want.w = 0.7;
  want.b = 0.3;
  want.test_mse = 1e-3;
  want.losses = {1.0, 0.5, 0.25};
  TrainingResult got = want;
  got.w = 0.7 * (1 + 5e-6);
  CHECK(check_against(got, want).ok);
  got.w = 0.7 * (1 + 5e-5);
  CHECK(check_against(got, want).failure == "w differs from the float64 reference");
  got = want;
  got.losses[2] = 0.25 * (1 + 2e-4);
  const Check late = check_against(got, want);
  CHECK_FALSE(late.ok);
  CHECK(late.failure == "losses differ from the float64 reference at 1 of 3 epochs, first at epoch 2: got 0.25005, "
                        "want 0.25");
  CHECK(late.losses == Catch::Approx(2e-4));
  // The reference's loss_rounding widens each epoch's tolerance by what float32 residuals allow.
  want.loss_rounding = {0.0, 0.0, 1e-4};
  CHECK(check_against(got, want).ok);
  want.loss_rounding = {0.0, 0.0, 1e-5};
  CHECK_FALSE(check_against(got, want).ok);
  want.loss_rounding.clear();
  got = want;
  got.test_mse = 1e-3 * (1 + 2e-4);
  CHECK(check_against(got, want).failure == "test MSE differs from the float64 reference");
  want.test_mse_rounding = 1e-6;
  CHECK(check_against(got, want).ok);
  got = want;
  got.losses.pop_back();
  CHECK(check_against(got, want).failure == "2 losses, the float64 reference has 3");
  got = want;
  got.diverged_at = 2;
  CHECK_THAT(check_against(got, want).failure, StartsWith("diverged at epoch 2, the float64 reference at epoch -"));
  want.diverged_at = 2;
  CHECK(check_against(got, want).ok);
  CHECK(scaled_lr(0.01, 5'000'000) == 0.01);
  CHECK(scaled_lr(0.01, 10'000'000) == Catch::Approx(0.0025));
  CHECK(first_divergent({1.0, 2.0, 1e11}) == 2);
  CHECK_FALSE(first_divergent({1.0, 2.0}));
}

TEST_CASE("output files: checked without truncating or leaving a file; a failed write names the reason") {
  const std::string kept = temp_path("kept.json");
  const std::string report = R"({"program": "linear_regression", "provenance": {"commit": "5e806168621e"}})";
  std::ofstream(kept) << report;
  workbook::require_output_file("--json", kept, ".json");
  std::ifstream in(kept);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == report);  // untouched
  const std::string fresh = temp_path("fresh.json");
  std::filesystem::remove(fresh);
  workbook::require_output_file("--json", fresh, ".json");
  CHECK_FALSE(std::filesystem::exists(fresh));  // the try's empty file is gone again
  CHECK_THROWS_WITH(workbook::require_output_file("--csv", fresh, ".csv"),
                    "--csv " + fresh + ": name a .csv file (it is overwritten)");
  // An existing file is replaced only if the workbook wrote it, as its provenance shows: never
  // from its shape (a JSON with "program", a CSV of plain column names can be a reader's own).
  const std::string other = temp_path("other.json");
  for (const char* foreign : {R"({"configurePresets": []})", R"({"program": "mine", "passed": true})", R"({"traceEvents": []})",
                              R"({"provenance": "mine"})"}) {
    std::ofstream(other) << foreign;
    CHECK_THROWS_WITH(workbook::require_output_file("--json", other, ".json"),
                      "--json " + other + ": is there and is not a file the workbook wrote; name another (it would be overwritten)");
  }
  std::ofstream(other) << R"({"traceEvents": [], "provenance": {"commit": "5e806168621e"}})";
  workbook::require_output_file("--trace", other, ".json");
  const std::string table = temp_path("table.csv");
  std::ofstream(table) << "# provenance: commit 5e806168621e (clean), no GPU\npoints,variant,ms\n5,1,0.1\n";
  workbook::require_output_file("--csv", table, ".csv");
  for (const char* foreign : {"Some notes, with spaces\n", "a,b\n1,2\n", "x,y\n"}) {
    std::ofstream(table) << foreign;
    CHECK_THROWS(workbook::require_output_file("--csv", table, ".csv"));
  }
  CHECK_THROWS_WITH(workbook::require_distinct_outputs("--trace", "t.json", "--json", "./t.json"),
                    "--trace and --json name the same file, ./t.json; one would overwrite the other");
  workbook::require_distinct_outputs("--trace", "t.json", "--json", "-");
  workbook::write_output_file("--json", fresh, "{\"a\": 1}\n");
  CHECK(std::filesystem::file_size(fresh) == 9);
  // A full device shows only when the buffer is flushed: the reason is still the system's.
  CHECK_THROWS_WITH(workbook::write_output_file("--json", "/dev/full", "{}"),
                    "cannot write --json file '/dev/full': No space left on device");
}

// test_04_linear_regression.cpp: chapter 04's checks. Untagged cases run without a GPU (data,
// split, reference, CPU version, the program's --device cpu and usage errors); [gpu] cases train
// on the GPU at boundary sizes; [pytorch] compares the CUDA run with the PyTorch script.
#include "gpu_support.h"
#include "linear_regression.h"
#include "minibatch.h"
#include "program_checks.h"
#include "regression_support.h"
#include "exit_codes.h"
#include "stream.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using namespace workbook;
using namespace workbook::regression;
using namespace workbook::linear_regression;
using namespace workbook::testing;

namespace {

double rel(double got, double want) { return std::fabs(got - want) / std::fabs(want); }

// A tiny well-conditioned problem: x = 0..3 train, x = 4 test, y = 0.7 x + 0.3 exactly.
Dataset tiny_dataset() {
  Dataset d;
  d.x = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f};
  for (float x : d.x) d.y.push_back(0.7f * x + 0.3f);
  d.split = {4, 1};
  return d;
}

}  // namespace

TEST_CASE("split: the first 80% by index train, at least one point tests") {
  CHECK(split_of(2).train == 1);
  CHECK(split_of(2).test == 1);
  CHECK(split_of(5).train == 4);
  CHECK(split_of(1023).train == 818);  // floor(0.8 * 1023) = floor(818.4)
  CHECK(split_of(5'000'000).train == 4'000'000);
  CHECK(split_of(5'000'000).test == 1'000'000);
  CHECK(split_of(10'000'000'003).train == 8'000'000'002);
}

TEST_CASE("data: X = i * 2e-6 and y = 0.7 X + 0.3 in float32, noise from cuRAND's host generator") {
  Config config;
  config.points = 1001;
  const Dataset clean = make_dataset_cpu(config);
  CHECK(clean.x[0] == 0.0f);
  CHECK(clean.x[500] == 500.0f * 0.000002f);
  CHECK(clean.y[0] == 0.3f);
  CHECK(std::fabs(clean.y[1000] - (0.7 * 0.002 + 0.3)) < 1e-7);
  CHECK(x_at(4'999'999) < 10.0f);

  config.noise = 0.5;
  const Dataset noisy = make_dataset_cpu(config);
  const Dataset again = make_dataset_cpu(config);
  CHECK(noisy.y == again.y);  // same seed, same numbers
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t i = 0; i < noisy.y.size(); ++i) {
    const double d = noisy.y[i] - clean.y[i];
    sum += d;
    sum_sq += d * d;
  }
  const double mean = sum / noisy.y.size();
  CHECK(std::fabs(mean) < 0.06);  // 4 standard errors of 0.5 / sqrt(1001)
  CHECK(std::sqrt(sum_sq / noisy.y.size()) == Catch::Approx(0.5).epsilon(0.1));
  config.seed = 7;
  CHECK(make_dataset_cpu(config).y != noisy.y);
}

TEST_CASE("validate refuses bad input with the flag's name") {
  auto refused = [](auto change) {
    Config c;
    change(c);
    try {
      validate(c);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused([](Config& c) { c.points = 1; }), StartsWith("--points must be at least 2"));
  CHECK_THAT(refused([](Config& c) { c.epochs = 0; }), StartsWith("--epochs must be at least 1"));
  CHECK_THAT(refused([](Config& c) { c.epochs = 2147483647; }), StartsWith("--epochs must be at most 1000000"));
  CHECK_THAT(refused([](Config& c) { c.lr = 0.0; }), StartsWith("--lr must be a finite number greater than 0"));
  CHECK_THAT(refused([](Config& c) { c.lr = NAN; }), StartsWith("--lr"));
  CHECK_THAT(refused([](Config& c) { c.lr = INFINITY; }), StartsWith("--lr"));
  CHECK_THAT(refused([](Config& c) { c.noise = -0.1; }), StartsWith("--noise must be"));
  CHECK_THAT(refused([](Config& c) { c.print_every = 0; }), StartsWith("--print-every"));
  CHECK(refused([](Config&) {}) == "accepted");
}

TEST_CASE("reference: the first epoch by hand, and convergence to w = 0.7, b = 0.3") {
  const Dataset d = tiny_dataset();
  Config config;
  config.epochs = 1;
  const TrainingResult one = train_reference(d, config);
  // r_i = 0.13 x_i + 0.4645 (up to the float32 rounding of the data): loss, then one SGD step.
  double loss = 0.0, gw = 0.0, gb = 0.0;
  for (int i = 0; i < 4; ++i) {
    const double r = double(0.83f) * d.x[i] + double(0.7645f) - d.y[i];  // float32 start values
    loss += r * r / 4;
    gw += 2 * r * d.x[i] / 4;
    gb += 2 * r / 4;
  }
  CHECK(one.losses.at(0) == Catch::Approx(loss).epsilon(1e-12));
  // The step in double, applied to w and b in float32, as every run stores them.
  CHECK(one.w == 0.83f - static_cast<float>(0.01 * gw));
  CHECK(one.b == 0.7645f - static_cast<float>(0.01 * gb));

  config.epochs = 5000;
  config.lr = 0.05;
  const TrainingResult many = train_reference(d, config);
  CHECK(std::fabs(many.w - 0.7) < 1e-6);
  CHECK(std::fabs(many.b - 0.3) < 1e-6);
  const TrainingResult cpu = train_cpu(d, config);
  CHECK(std::fabs(cpu.w - 0.7) < 1e-5);
  CHECK(std::fabs(cpu.b - 0.3) < 1e-5);
}

TEST_CASE("CPU version at the article's size matches the float64 reference") {
  const Config config;  // 5M points, 200 epochs, lr 0.01
  const Dataset d = make_dataset_cpu(config);
  const TrainingResult want = train_reference(d, config);
  const TrainingResult got = train_cpu(d, config);
  require_matches_reference(got, want);
  CHECK(rel(got.w, want.w) < 1e-6);  // the measured margin is about 100x (README)
  CHECK(got.training_ms > 0.0);
  // What float32 residuals can move a loss stays far inside the relative tolerance here.
  REQUIRE(want.loss_rounding.size() == want.losses.size());
  for (std::size_t e = 0; e < want.losses.size(); ++e) CHECK(want.loss_rounding[e] < 3e-5 * want.losses[e]);
  CHECK(want.test_mse_rounding < 3e-5 * want.test_mse);
}

TEST_CASE("program --device cpu: training on to a loss near 0 still matches the reference") {
  // Late steps move w by less than a float32 ulp, and residuals near 0 are known only to a few
  // ulps of y: the reference stores w and b in float32 and allows for that rounding (regression_problem.h).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--quick", "--epochs", "800"}, {"--points", "1000", "--lr", "0.5"},
        {"--points", "5", "--epochs", "400"}, {"--points", "100", "--lr", "0.5", "--epochs", "3000"}}) {
    const ProgramResult r = run_program(with_args({WORKBOOK_PROGRAM, "--device", "cpu"}, args));
    CAPTURE(args, r.out);
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.out) == "PASS");
  }
}

TEST_CASE("divergence at lr = 1.0 is caught at the same epoch by the reference and the CPU version") {
  Config config;
  config.lr = 1.0;
  const Dataset d = make_dataset_cpu(config);
  const TrainingResult want = train_reference(d, config);
  const TrainingResult got = train_cpu(d, config);
  REQUIRE(want.diverged_at);
  REQUIRE(got.diverged_at);
  CHECK(*got.diverged_at == *want.diverged_at);
  CHECK(*got.diverged_at < 20);
}

TEST_CASE("program --device cpu: PASS, JSON with the PyTorch script's fields") {
  const std::string json = temp_path("cpu.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--device", "cpu", "--quick", "--json", json});
  require_pass(r);
  CHECK_THAT(r.out, ContainsSubstring("epoch   10  loss"));
  for (const char* step : {"== 1. ", "== 2. ", "== 3. ", "== 4. "}) CHECK_THAT(r.out, ContainsSubstring(step));
  const nlohmann::json j = read_json(json);
  for (const char* key : {"program", "device", "torch_device", "quick", "points", "epochs", "lr", "losses", "result",
                          "passed", "failures"}) {
    CAPTURE(key);
    CHECK(j.contains(key));
  }
  CHECK(j["device"] == "CPU");
  CHECK(j["quick"] == true);
  CHECK_FALSE(j.contains("ms"));  // no row flattened into the top level
  CHECK(j["losses"].size() == 6);  // 60 epochs, printed every 10
  CHECK(j["losses"][1]["epoch"] == 10);
  REQUIRE(j["result"].size() == 1);
  const nlohmann::json& result = j["result"][0];
  for (const char* key : {"w", "b", "test_mse", "w_error", "check", "training_ms"}) {
    CAPTURE(key);
    CHECK(result.contains(key));
  }
  CHECK(result["check"] == "ok");
  check_timing(result["training_ms"], 2);  // --quick: 2 timed runs
  CHECK(result["training_ms"]["median"].get<double>() > 0.0);
}

TEST_CASE("bench --device cpu: each step's time per epoch, checked first") {
  const std::string json = temp_path("cpu_steps.json");
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "--device", "cpu", "--quick", "--json", json});
  require_pass(r);
  CHECK_THAT(r.out, ContainsSubstring("checked against the float64 reference"));
  const nlohmann::json j = read_json(json);
  CHECK(j["device"] == "CPU");
  CHECK(j["epochs"] == 60);
  CHECK_FALSE(j.contains("setup"));  // the setup costs are the GPU's
  const nlohmann::json steps = j["steps"];
  REQUIRE(steps.size() == 5);
  CHECK(steps[2]["step"] == "backward");
  CHECK(steps[4]["step"] == "total");
  for (const auto& step : steps) check_timing(step["time_ms"], 60);  // one sample an epoch
  CHECK(steps[2]["time_ms"]["median"].get<double>() > 0.0);
  CHECK(steps[4]["time_ms"]["median"].get<double>() >= steps[2]["time_ms"]["median"].get<double>());
  CHECK(steps[2].contains("gbps"));
  CHECK_FALSE(steps[3].contains("gbps"));  // the SGD step moves no array

  const ProgramResult diverged = run_program({WORKBOOK_BENCH_PROGRAM, "--device", "cpu", "--epochs", "10", "--lr", "1.0"});
  CHECK(diverged.exit_code == 1);
  CHECK_THAT(last_line(diverged.out), StartsWith("FAIL: diverged at epoch"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--points", "1"}, {"--device", "gpu"}, {"--sweep"}, {"--print-every", "5"}}) {
    check_one_line(with_args({WORKBOOK_BENCH_PROGRAM}, args), 2);
  }
}

TEST_CASE("program: bad input is one line and exit 2, divergence is exit 1 without NaN") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--points", "1"}, {"--epochs", "0"}, {"--lr", "0"}, {"--lr", "-1"}, {"--lr", "nan"},
        {"--lr", "inf"}, {"--seed", "-1"}, {"--noise", "-1"}, {"--device", "gpu"}, {"--points", "x"}, {"--points", "50X"},
        {"--points", "5.5M"}, {"--points", "-5"}, {"--device", "cuda:"}, {"--device", "-1"}, {"--device", "CPU"},
        {"--device", "0x1"}, {"--lr", "0x10"}, {"--points", "5m"}, {"--epochs", "010"}, {"--seed", "7"},
        {"--json", "README.md"}, {"--json", "/proc/self/x.json"},
        {"--json", std::string(WORKBOOK_CHAPTER_DIR) + "/../CMakePresets.json"}}) {
    check_one_line(with_args({WORKBOOK_PROGRAM}, args), 2, Stdout::kEmpty);
  }
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--device", "cpu", "--lr", "1.0"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, ContainsSubstring("diverged at epoch 4"));
  CHECK(last_line(r.out) == "FAIL: diverged at epoch 4");
  CHECK_FALSE(Catch::Matchers::ContainsSubstring("nan").match(report_after_provenance(r.out)));
  CHECK_FALSE(Catch::Matchers::ContainsSubstring("inf").match(report_after_provenance(r.out)));
}

TEST_CASE("program without a usable GPU exits 77 with one line") {
  check_no_gpu({WORKBOOK_PROGRAM, "--quick"}, Stdout::kEmpty);
}

TEST_CASE("program: the device flag takes N, cuda and cuda:N as every chapter does, and cpu") {
  for (const char* device : {"0", "3", "cuda", "cuda:0", "cuda:3"}) {
    check_no_gpu({WORKBOOK_PROGRAM, "--quick", "--device", device, "--points", "50K"}, "linear_regression");
  }
  const ProgramResult gpu = run_program({WORKBOOK_PROGRAM, "--device", "gpu"});
  CHECK_THAT(gpu.err, StartsWith("error: --device must be cpu, N, cuda or cuda:N (e.g. 0 or cuda:1), got 'gpu'"));
  const std::string json = temp_path("cpu_50k.json");
  const ProgramResult cpu = run_program({WORKBOOK_PROGRAM, "--device", "cpu", "--quick", "--points", "30K", "--json", json});
  CHECK(cpu.exit_code == 0);
  CHECK(read_json(json)["points"] == 30'000);
  CHECK(read_json(json)["device"] == "CPU");
  CHECK(read_json(json)["torch_device"] == "cpu");
}

TEST_CASE("GPU training matches the reference and the host data at boundary sizes", "[gpu]") {
  require_gpus(1);
  const std::int64_t points = GENERATE(2, 5, 1023, 1024, 1025, 2048 * 256 + 1, 1'000'003);
  CAPTURE(points);
  Config config;
  config.points = points;
  Stream stream;
  GpuRegression gpu(config, stream.get());
  const Dataset d = gpu.copy_dataset();
  CHECK(d.x == make_dataset_cpu(config).x);  // bit for bit: same float32 operations
  CHECK(d.y == make_dataset_cpu(config).y);
  const TrainingResult want = train_reference(d, config);
  const TrainingResult got = gpu.train();
  require_matches_reference(got, want);
  require_matches_reference(train_cpu(d, config), want);
  const TrainingResult again = gpu.train();
  CHECK(again.w == got.w);  // deterministic reductions: bit-identical
  CHECK(again.b == got.b);
  CHECK(again.losses == got.losses);
}

TEST_CASE("GPU: bit-identical across instances; cuRAND noise equals the host generator's", "[gpu]") {
  require_gpus(1);
  Config config;
  config.points = 300'007;
  config.noise = 0.1;
  Stream stream;
  GpuRegression first(config, stream.get());
  GpuRegression second(config, stream.get());
  const TrainingResult a = first.train();
  const TrainingResult b = second.train();
  CHECK(a.w == b.w);
  CHECK(a.b == b.b);
  const Dataset on_gpu = first.copy_dataset();
  const Dataset on_host = make_dataset_cpu(config);
  const Comparison c = compare(on_gpu.y, on_host.y, Tolerance{1e-6, 1e-6});
  CAPTURE(c.summary());
  CHECK(c.ok());
  require_matches_reference(a, train_reference(on_gpu, config));
}

TEST_CASE("GPU divergence stops the loop at the reference's epoch", "[gpu]") {
  require_gpus(1);
  Config config;
  config.lr = 1.0;
  config.print_every = 1;  // a sync every epoch: the first divergent epoch is seen at once
  Stream stream;
  GpuRegression gpu(config, stream.get());
  const TrainingResult want = train_reference(gpu.copy_dataset(), config);
  const TrainingResult got = gpu.train();
  REQUIRE(got.diverged_at);
  CHECK(*got.diverged_at <= *want.diverged_at);
  CHECK(*got.diverged_at >= *want.diverged_at - 1);
}

TEST_CASE("program on the GPU: PASS, divergence, out-of-memory and bad index", "[gpu]") {
  const std::string json = temp_path("cuda.json");
  const ProgramResult ok = run_program({WORKBOOK_PROGRAM, "--quick", "--json", json});
  skip_if_no_gpu(ok);
  CHECK(ok.exit_code == 0);
  CHECK(last_line(ok.out) == "PASS");
  CHECK(read_json(json)["implementation"] == "cuda");
  CHECK(read_json(json)["torch_device"] == "cuda:0");
  CHECK(read_json(json)["device"] != "CPU");
  check_timing(read_json(json)["result"][0]["training_ms"], 2);

  const std::string steps = temp_path("cuda_steps.json");
  const ProgramResult bench = run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--json", steps});
  CHECK(bench.exit_code == 0);
  CHECK(read_json(steps)["steps"].size() == 5);
  CHECK(read_json(steps)["copy_gbps"].get<double>() > 0.0);
  // Issue #30: the model's parameters copied or made on the GPU, the data made without and with noise.
  const nlohmann::json setup = read_json(steps)["setup"];
  REQUIRE(setup.size() == 4);
  CHECK(setup[0]["pytorch"] == "nn.Linear(1, 1).to('cuda')");
  CHECK(setup[2]["what"] == "data made on the GPU, noise 0");
  CHECK(setup[3]["what"] == "data made on the GPU, noise 0.1");
  for (const auto& row : setup) check_timing(row["time_ms"], 3);  // --quick: 3 timed runs

  const ProgramResult diverged = run_program({WORKBOOK_PROGRAM, "--lr", "1.0"});
  CHECK(diverged.exit_code == 1);
  CHECK_THAT(diverged.out, ContainsSubstring("diverged at epoch"));
  CHECK_FALSE(Catch::Matchers::ContainsSubstring("nan").match(report_after_provenance(diverged.out)));

  for (const char* points : {"100000000000", "100G", "9223372036854775807"}) {  // the last overflows a byte count
    CAPTURE(points);  // for the check after the helper's
    const ProgramResult huge = check_one_line({WORKBOOK_PROGRAM, "--points", points}, 1,
                                              StartsWith("error: --points ") && ContainsSubstring(" needs ") &&
                                                  ContainsSubstring("MiB are free on device 0"),
                                              Stdout::kEmpty);
    CHECK_THAT(huge.err, !ContainsSubstring(".cu:"));  // a reason, not a source location
  }

  for (const char* index : {"cuda:99", "99"}) {
    check_one_line({WORKBOOK_PROGRAM, "--device", index, "--quick"}, 2,
                   StartsWith("error: --device 99: cudaErrorInvalidDevice: invalid device ordinal; this machine has "));
  }
}

TEST_CASE("the CUDA run and PyTorch on the same GPU agree on w and b", "[pytorch]") {
  require_torch_cuda(WORKBOOK_PYTHON);
  const std::string ours = temp_path("cuda.json");
  const std::string theirs = temp_path("torch.json");
  const ProgramResult a = run_program({WORKBOOK_PROGRAM, "--json", ours});
  skip_if_no_gpu(a);
  REQUIRE(a.exit_code == 0);
  const ProgramResult b = run_program({WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_regression.py",
                                       "--device", "cuda", "--repeats", "2", "--json", theirs});
  CAPTURE(b.err);
  REQUIRE(b.exit_code == 0);
  const nlohmann::json c = read_json(ours), t = read_json(theirs);
  CHECK(t["device"] == c["device"]);  // both name the GPU
  check_timing(t["result"][0]["training_ms"], 2);
  REQUIRE(t["steps"].size() == 5);
  check_timing(t["steps"][0]["time_ms"], 200);  // one sample an epoch
  REQUIRE(t["setup"].size() == 4);  // the rows linear_regression_bench writes
  CHECK(t["setup"][1]["what"] == "parameters made on the GPU");
  CHECK(t["setup"][3]["what"] == "data made on the GPU, noise 0.1");
  for (const auto& row : t["setup"]) check_timing(row["time_ms"], 10);
  const nlohmann::json &cr = c["result"][0], &tr = t["result"][0];
  CAPTURE(cr["w"].get<double>(), tr["w"].get<double>(), cr["b"].get<double>(), tr["b"].get<double>());
  CHECK(within(tr["w"].get<double>(), cr["w"].get<double>(), kParameterTolerance));
  CHECK(within(tr["b"].get<double>(), cr["b"].get<double>(), kParameterTolerance));
  REQUIRE(c["losses"].size() == t["losses"].size());
  for (std::size_t i = 0; i < c["losses"].size(); ++i) {
    CHECK(t["losses"][i]["epoch"] == c["losses"][i]["epoch"]);
    CHECK(within(t["losses"][i]["loss"].get<double>(), c["losses"][i]["loss"].get<double>(), kLossTolerance));
  }
}

TEST_CASE("pytorch_regression.py --profile writes a torch.profiler trace with the loop's kernels", "[pytorch]") {
  require_torch_cuda(WORKBOOK_PYTHON);
  const std::string trace = temp_path("torch_profile.json");
  const std::string out = temp_path("torch_profiled.json");
  const ProgramResult r = run_program({WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_regression.py",
                                       "--quick", "--profile", trace, "--profile-epochs", "5", "--json", out});
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json events = read_json(trace)["traceEvents"];
  int kernels = 0;
  for (const auto& e : events) kernels += e.value("cat", "") == "kernel";
  CHECK(kernels >= 5 * 4);  // forward, loss, backward and step each launch at least one kernel per epoch
  const nlohmann::json busy = read_json(out)["profile"]["gpu_busy"];
  CHECK(busy["operations"].get<int>() >= kernels);
  CHECK(busy["fraction"].get<double>() > 0.0);
  CHECK(busy["fraction"].get<double>() <= 1.0);
  // The two-epoch cut for plot_trace.py: the host's launch calls and the GPU's operations.
  const nlohmann::json cut = read_json(read_json(out)["profile"]["timeline"].get<std::string>())["traceEvents"];
  std::map<int, int> per_track;
  for (const auto& e : cut) {
    if (e["ph"] == "X") ++per_track[e["tid"].get<int>()];
  }
  CHECK(per_track[0] > 0);
  CHECK(per_track[1] > 0);
}

TEST_CASE("mini-batch plan: batch sizes refused with the flag's name, slices cover the training set once") {
  for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{11}}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(validate(BatchPlan{bad, false, 42}, 10, 200), StartsWith("--batch-size must be 1 to the 10 training points"));
  }
  CHECK_NOTHROW(validate(BatchPlan{1, false, 42}, 10, 200));
  CHECK_NOTHROW(validate(BatchPlan{10, false, 42}, 10, 200));
  CHECK_THROWS_WITH(validate(BatchPlan{1, false, 42}, 4'000'000, 200),
                    StartsWith("--batch-size 1 makes 800000000 steps (batches x --epochs); at most "));
  CHECK(batch_count(10, 4) == 3);
  CHECK(batch_count(12, 4) == 3);
  CHECK(batch_slice(2, 10, 4).first == 8);
  CHECK(batch_slice(2, 10, 4).count == 2);  // the last batch holds what is left
  const std::int64_t n = GENERATE(1, 31, 4'000'000);
  const std::int64_t size = GENERATE(1, 7, 65'536);
  if (size > n) return;
  CAPTURE(n, size);
  std::int64_t covered = 0;
  for (std::int64_t k = 0; k < batch_count(n, size); ++k) {
    const BatchSlice s = batch_slice(k, n, size);
    CHECK(s.first == covered);
    CHECK(s.count >= 1);
    covered += s.count;
  }
  CHECK(covered == n);
}

TEST_CASE("mini-batch order: in sequence unshuffled; shuffled, a permutation fixed by seed and epoch") {
  CHECK(batch_order(5, BatchPlan{1, false, 42}, 3) == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  const BatchPlan shuffled{1, true, 42};
  // The values common/regression_torch.py's restatement gives (a ctest checks the Python side).
  CHECK(batch_order(8, shuffled, 0) == std::vector<std::int64_t>{0, 6, 7, 3, 5, 2, 1, 4});
  CHECK(batch_order(8, shuffled, 1) == std::vector<std::int64_t>{2, 5, 0, 6, 3, 4, 1, 7});
  CHECK(batch_order(8, BatchPlan{1, true, 7}, 0) == std::vector<std::int64_t>{6, 3, 4, 5, 1, 2, 7, 0});
  std::vector<std::int64_t> order = batch_order(1'000, shuffled, 5);
  CHECK(order != batch_order(1'000, shuffled, 6));
  std::sort(order.begin(), order.end());
  CHECK(order == batch_order(1'000, BatchPlan{1, false, 42}, 5));
  CHECK(batch_order(1, shuffled, 0) == std::vector<std::int64_t>{0});
}

TEST_CASE("mini-batch references: one batch is full-batch SGD; float32 twin within 04's tolerances") {
  Config config;
  config.points = 200'003;
  config.epochs = 6;
  const Dataset d = make_dataset_cpu(config);
  // A single batch in order is the full-batch recurrence: the same sums in the same order and the
  // same float32 steps, so the same bits (the full-batch reference has no mean over batches).
  const TrainingResult full = train_reference(d, config);
  const TrainingResult one = train_minibatch_reference(d, config, BatchPlan{d.split.train, false, 42});
  CHECK(one.losses == full.losses);
  CHECK(one.w == full.w);
  CHECK(one.b == full.b);
  CHECK(one.test_mse == full.test_mse);
  CHECK(one.w == static_cast<double>(static_cast<float>(one.w)));
  // Many shuffled batches: the float32 twin follows the reference step for step.
  for (const bool shuffle : {false, true}) {
    CAPTURE(shuffle);
    const BatchPlan plan{4'096, shuffle, 42};
    const TrainingResult want = train_minibatch_reference(d, config, plan);
    const Check c = check_minibatch(train_minibatch_cpu(d, config, plan), want);
    CAPTURE(c.failure);
    CHECK(c.ok);
    CHECK(want.losses.back() < full.losses.back());  // 49 steps an epoch go further than one
  }
  // Divergence: the loss grows within an epoch (62 steps), so float32 can overflow to infinity in
  // the epoch in which the double reference's mean loss is still finite: caught in the same
  // epoch or one earlier.
  config.lr = 1.0;
  config.points = 5'000'000;
  config.epochs = 10;
  const Dataset big = make_dataset_cpu(config);
  const TrainingResult want = train_minibatch_reference(big, config, BatchPlan{65'536, true, 42});
  const TrainingResult got = train_minibatch_cpu(big, config, BatchPlan{65'536, true, 42});
  REQUIRE(want.diverged_at);
  REQUIRE(got.diverged_at);
  CHECK(*got.diverged_at <= *want.diverged_at);
  CHECK(*got.diverged_at >= *want.diverged_at - 1);
}

TEST_CASE("program on the CPU: a data set larger than the host's memory is one line and exit 1, before allocating") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--device", "cpu"}, {"--device", "cpu", "--batch-size", "64M"}}) {
    check_one_line(with_args({WORKBOOK_PROGRAM, "--points", "100G"}, args), 1,
                   StartsWith("error: --points 100000000000 (the data set on the host) needs ") &&
                       ContainsSubstring(" of host memory, but only "),
                   Stdout::kEmpty);  // refused before the report starts
  }
}

TEST_CASE("program, one- and two-point batches on the CPU: each step moves w by a few ulps, and it still passes") {
  // The case that once failed: float32 w stops moving where a float64 w goes on (swamping); the
  // reference stores w and b in float32 too, so only the run's arithmetic is judged.
  for (const char* size : {"1", "2"}) {
    CAPTURE(size);
    const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--device", "cpu", "--quick", "--batch-size", size});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, EndsWith("PASS\n"));
  }
}

TEST_CASE("program, mini-batches on the CPU: checked against the batch-order reference; usage errors") {
  const std::string json = temp_path("cpu_minibatch.json");
  const ProgramResult r =
      run_program({WORKBOOK_PROGRAM, "--device", "cpu", "--quick", "--batch-size", "4096", "--shuffle", "--json", json});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, ContainsSubstring("by mini-batch SGD") && ContainsSubstring("4 batches of up to 4096 points"));
  const nlohmann::json rows = read_json(json)["minibatch"];
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["check"] == "ok");
  check_timing(rows[0]["epoch_ms"], 1);  // --quick: one timed run
  CHECK(rows[0]["epoch_ms"]["median"].get<double>() > 0.0);
  CHECK_THAT(r.out, ContainsSubstring("time per epoch, one run (host clock)"));  // not "median of 1 runs"
  CHECK_THAT(r.out, !ContainsSubstring("median of 1 "));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--batch-size", "0"}, {"--batch-size", "16009"}, {"--shuffle"}, {"--fill-threads", "2"},
        {"--batch-size", "1", "--epochs", "1000"}, {"--batch-size", "64", "--fill-threads", "0"},
        {"--batch-size", "64", "--fill-threads", "100000"}, {"--epochs", "2147483647"},
        {"--batch-size", "64", "--fill-threads", "2"}, {"--batch-size", "64", "--print-every", "5"}}) {
    check_one_line(with_args({WORKBOOK_PROGRAM, "--device", "cpu", "--quick"}, args), 2);
  }
}

TEST_CASE("GPU mini-batch pipelines: each matches the batch-order reference, all five the same bits", "[gpu]") {
  require_gpus(1);
  Config config;
  config.points = 100'003;  // 80'002 training points
  config.epochs = 3;
  const Dataset d = make_dataset_cpu(config);
  const std::int64_t size = GENERATE(4'099, 80'002);  // a batch size that is no multiple of 4; one batch
  const int threads = GENERATE(1, 3);
  CAPTURE(size, threads);
  const BatchPlan plan{size, true, 7};
  const TrainingResult want = train_minibatch_reference(d, config, plan);
  Stream compute, copy;
  std::optional<TrainingResult> first;
  for (int k = 1; k <= kPipelineCount; ++k) {
    const Pipeline p = static_cast<Pipeline>(k);
    CAPTURE(pipeline_name(p));
    const MinibatchRun run = train_minibatch_gpu(d, config, plan, p, threads, compute.get(), copy.get());
    const Check c = check_minibatch(run.result, want);
    CAPTURE(c.failure);
    CHECK(c.ok);
    CHECK(run.last_epoch_ms > 0.0);
    CHECK(run.copy_busy_ms > 0.0);
    CHECK(run.copy_busy_ms <= run.last_epoch_ms * 1.01);
    if (!first) first = run.result;
    CHECK(run.result.w == first->w);  // the same kernel, the same order: the same bits
    CHECK(run.result.b == first->b);
    CHECK(run.result.losses == first->losses);
  }
}

TEST_CASE("program, mini-batches on the GPU: five pipelines checked, timed, against the PCIe bound", "[gpu]") {
  const std::string json = temp_path("gpu_minibatch.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--quick", "--batch-size", "4096", "--shuffle", "--json", json});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, ContainsSubstring("PCIe bound: the best pinned host-to-device copy here"));
  const nlohmann::json rows = read_json(json)["minibatch"];
  REQUIRE(rows.size() == kPipelineCount);
  for (const auto& row : rows) {
    CAPTURE(row.dump());
    CHECK(row["check"] == "ok");
    check_timing(row["epoch_ms"], 1);  // --quick: one timed run
    CHECK(row["bound_percent"].get<double>() > 0.0);
  }
}

TEST_CASE("pytorch_minibatch.py: the DataLoader and pinned-slice runs match the reference and the CUDA pipelines",
          "[pytorch]") {
  require_torch_cuda(WORKBOOK_PYTHON);
  const std::string ours = temp_path("cuda_minibatch.json");
  const std::string theirs = temp_path("torch_minibatch.json");
  const ProgramResult a = run_program({WORKBOOK_PROGRAM, "--quick", "--batch-size", "4096", "--shuffle", "--json", ours});
  skip_if_no_gpu(a);
  REQUIRE(a.exit_code == 0);
  const ProgramResult b = run_program({WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_minibatch.py", "--quick",
                                       "--batch-size", "4096", "--shuffle", "--json", theirs});
  CAPTURE(b.out, b.err);
  REQUIRE(b.exit_code == 0);
  const nlohmann::json t = read_json(theirs);
  CHECK(t["passed"] == true);
  const nlohmann::json cuda_row = read_json(ours)["minibatch"][0];
  int checked = 0;
  for (const auto& row : t["minibatch"]) {
    CAPTURE(row.dump());
    if (row["check"] == "not checked") {  // per_sample: another order, an epoch estimated from a few batches
      CHECK(row["estimated_epoch_ms"].get<double>() > 0.0);
      continue;
    }
    check_timing(row["epoch_ms"], 1);  // --quick: one timed run
    CHECK(row["check"] == "ok");
    CHECK(within(row["w"].get<double>(), cuda_row["w"].get<double>(), kParameterTolerance));
    CHECK(within(row["b"].get<double>(), cuda_row["b"].get<double>(), kParameterTolerance));
    ++checked;
  }
  CHECK(checked == 4);  // pageable, dataloader without and with workers, pinned_slices
}

TEST_CASE("bench --batch-sizes, --sync-every and --trace: refused on the CPU, together, or with a value that does not fit") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--device", "cpu", "--batch-sizes", "4K"}, {"--shuffle"}, {"--batch-sizes", "4K,,8K"},
        {"--batch-sizes", "0"}, {"--batch-sizes", "20012"}, {"--batch-sizes", "16009"}, {"--batch-sizes", "4K", "--fill-threads", "0"},
        {"--batch-sizes", "4K", "--fill-threads", "100000"},
        {"--sync-every", "0"}, {"--sync-every", "61"}, {"--sync-every", "1", "--device", "cpu"},
        {"--sync-every", "1", "--batch-sizes", "4K"}, {"--trace", "t.json"}, {"--batch-sizes", "4K,8K", "--trace", "t.json"},
        {"--batch-sizes", "4K", "--trace", ""}, {"--batch-sizes", "4K", "--trace"},
        {"--batch-sizes", "4K", "--trace", "/no/such/folder/t.json"}, {"--batch-sizes", "4K", "--trace", "."},
        {"--json", "."}, {"--copy-sizes", "64K", "--device", "cpu"}, {"--copy-sizes", "64K", "--batch-sizes", "4K"},
        {"--copy-sizes", "64K", "--sync-every", "1"}, {"--copy-sizes", "8"}, {"--copy-sizes", "1000"},
        {"--copy-sizes", "3M"}, {"--copy-sizes", "65M"}, {"--copy-sizes", ""}}) {
    check_one_line(with_args({WORKBOOK_BENCH_PROGRAM, "--quick"}, args), 2);
  }
  // 1,000 bytes is a multiple of 8, not of 16; 3M does not divide the 64M a pass moves.
  check_one_line({WORKBOOK_BENCH_PROGRAM, "--copy-sizes", "1000"}, 2,
                 StartsWith("error: --copy-sizes: 1000 is not a multiple of 16 dividing 64M"));
  // The line names the flag given, and the bound is the training points (16,008 of --quick's 20,011).
  check_one_line({WORKBOOK_BENCH_PROGRAM, "--quick", "--batch-sizes", "20000"}, 2,
                 StartsWith("error: --batch-sizes") && ContainsSubstring("16008"));
  check_one_line({WORKBOOK_PROGRAM, "--device", "cpu", "--quick", "--batch-size", "64", "--fill-threads", "2"}, 2,
                 StartsWith("error: --fill-threads fills the GPU pipelines' pinned ring"));
}

TEST_CASE("bench --batch-sizes on the GPU: every pipeline at every size, checked", "[gpu]") {
  const std::string json = temp_path("batch_sweep.json");
  const ProgramResult r =
      run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--batch-sizes", "1000,4099,16008", "--shuffle", "--json", json});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json rows = read_json(json)["batch_sweep"];
  REQUIRE(rows.size() == 3 * kPipelineCount);
  for (const auto& row : rows) {
    CHECK(row["check"] == "ok");
    check_timing(row["epoch_ms"], 1);
  }
}

TEST_CASE("bench --copy-sizes on the GPU: every way at every size, every byte checked, against the bus's bound", "[gpu]") {
  const std::string json = temp_path("small_copies.json");
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "--copy-sizes", "64K,1M", "--json", json});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = read_json(json);
  CHECK(j["pcie_bound_gbps"].get<double>() > 0);
  const nlohmann::json& rows = j["small_copies"];
  const std::vector<std::string> ways{"memcpy_async", "batched", "graph", "kernel", "two_streams"};
  REQUIRE(rows.size() == 2 * ways.size());  // sizes x ways, in that order
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(rows[i].dump());
    CHECK(rows[i]["size"] == (i < ways.size() ? 64'000 : 1'000'000));
    CHECK(rows[i]["way"] == ways[i % ways.size()]);
    CHECK(rows[i]["check"] == "ok");
    CHECK(rows[i]["gbps"].get<double>() > 0);  // measured (a rate, not judged)
  }
}

TEST_CASE("bench --trace on the GPU: each pipeline's copies and steps on its streams' tracks, each step after its copy",
          "[gpu]") {
  const std::string trace = temp_path("minibatch_trace.json");
  const std::string json = temp_path("minibatch_trace_summary.json");
  // --quick: 16008 training points, 17 batches of up to 1000 an epoch, so 8 steps are traced.
  const ProgramResult r = run_program(
      {WORKBOOK_BENCH_PROGRAM, "--quick", "--batch-sizes", "1000", "--shuffle", "--trace", trace, "--json", json});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  require_pass(r);
  constexpr std::size_t kTraced = 8;
  struct Op {
    std::string name, category;
    double start = 0.0, end = 0.0;
  };
  std::map<int, std::string> names;
  std::map<int, std::vector<Op>> tracks;  // track -> its ops, in file order
  const nlohmann::json events = read_json(trace)["traceEvents"];  // a copy: the parsed file is a temporary
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    CHECK(ts >= 0.0);
    CHECK(dur >= 0.0);
    tracks[e["tid"].get<int>()].push_back({e["name"], e["cat"], ts, ts + dur});
  }
  REQUIRE(names.size() == 2 * kPipelineCount);
  for (int k = 1; k <= kPipelineCount; ++k) {
    const Pipeline p = static_cast<Pipeline>(k);
    const std::string pipeline = std::to_string(k) + " " + pipeline_name(p);
    CAPTURE(pipeline);
    const int copy_track = 2 * k - 2, compute_track = 2 * k - 1;
    CHECK(names[copy_track] == pipeline + ": copy stream");
    CHECK(names[compute_track] == pipeline + ": compute stream");
    // Pipelines 3 and 4 copy each batch on the copy stream, 5 the 17 batches of an epoch in
    // groups of up to kCopyGroup (one group traced: its first step is traced); 1 and 2 queue
    // their copies on the compute stream.
    const std::size_t copy_ops = p == Pipeline::kBatched ? 1 : p == Pipeline::kRing || p == Pipeline::kPinnedSet ? kTraced : 0;
    CHECK(tracks[copy_track].size() == copy_ops);
    std::map<int, Op> copies, steps;  // by the step's place in the last epoch (a group's: each of its steps)
    for (const int track : {copy_track, compute_track}) {
      std::vector<Op> ops = tracks[track];
      std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.start < b.start; });
      for (std::size_t i = 0; i < ops.size(); ++i) {
        CAPTURE(ops[i].name);
        if (i > 0) CHECK(ops[i].start >= ops[i - 1].end - 0.01);  // one stream: one op after another
        if (ops[i].category == "copy_in" && p == Pipeline::kBatched) {
          REQUIRE_THAT(ops[i].name, StartsWith("H2D batches "));  // "H2D batches 0-15"
          const std::string range = ops[i].name.substr(12);
          const int first = std::stoi(range), last = std::stoi(range.substr(range.find('-') + 1));
          CHECK(last - first + 1 == std::min(kCopyGroup, 17));
          for (int step = first; step <= last && step < static_cast<int>(kTraced); ++step) copies[step] = ops[i];
        } else if (ops[i].category == "copy_in") {
          REQUIRE_THAT(ops[i].name, StartsWith("H2D batch "));
          copies[std::stoi(ops[i].name.substr(10))] = ops[i];
        } else {
          CHECK(track == compute_track);
          CHECK(ops[i].category == "compute");
          REQUIRE_THAT(ops[i].name, StartsWith("step "));
          steps[std::stoi(ops[i].name.substr(5))] = ops[i];
        }
      }
    }
    // The same numbering on both sides, the first steps of the epoch: 0 .. 7.
    REQUIRE(copies.size() == kTraced);
    REQUIRE(steps.size() == kTraced);
    CHECK(copies.rbegin()->first == static_cast<int>(kTraced) - 1);
    CHECK(steps.rbegin()->first == static_cast<int>(kTraced) - 1);
    for (int i = 0; i < static_cast<int>(kTraced); ++i) {
      CAPTURE(i, copies.at(i).start, copies.at(i).end, steps.at(i).start);
      // Step i reads what copy i brought: it starts after the copy ends (1 us for the event timer).
      CHECK(steps.at(i).start >= copies.at(i).end - 1.0);
    }
  }
  // The table printed after the trace, from the same ops: shares of the traced time.
  const nlohmann::json summary = read_json(json)["trace"];
  CHECK(summary["steps"] == kTraced);
  // Each pipeline's 8 steps and 8 copies, but 5's one copy of a group.
  CHECK(summary["operations"].get<std::size_t>() == 2 * kTraced * (kPipelineCount - 1) + kTraced + 1);
  REQUIRE(summary["pipelines"].size() == kPipelineCount);
  for (const auto& row : summary["pipelines"]) {
    CAPTURE(row.dump());
    CHECK(row["steps"] == kTraced);
    CHECK(row["traced_us"].get<double>() > 0.0);
    const double copy = row["copy_busy_percent"], compute = row["compute_busy_percent"];
    const double idle = row["idle_percent"], hidden = row["copy_hidden_percent"];
    for (const double share : {copy, compute, idle, hidden}) {
      CHECK(share >= 0.0);
      CHECK(share <= 100.0 + 1e-9);
    }
    CHECK(copy + compute - hidden * copy / 100.0 + idle == Catch::Approx(100.0).margin(0.01));
  }
  // One stream cannot overlap its own copies with its steps.
  CHECK(summary["pipelines"][0]["copy_hidden_percent"].get<double>() <= 1.0);
  CHECK(summary["pipelines"][1]["copy_hidden_percent"].get<double>() <= 1.0);
}

TEST_CASE("bench --sync-every on the GPU: every read interval checked and timed, the cost of one wait", "[gpu]") {
  const std::string json = temp_path("sync_cost.json");
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--sync-every", "1,10,60", "--json", json});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json rows = read_json(json)["sync_cost"];
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["syncs"] == 60);  // --quick: 60 epochs
  CHECK(rows[1]["syncs"] == 6);
  CHECK(rows[2]["syncs"] == 1);
  for (const auto& row : rows) {
    CHECK(row["check"] == "ok");
    check_timing(row["training_ms"], 5);  // 7 runs, the first 2 warm-up
  }
  CHECK(rows[0].contains("extra_us_per_sync"));
  CHECK_FALSE(rows[2].contains("extra_us_per_sync"));  // the fewest waits: the baseline
}

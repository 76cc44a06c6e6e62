// test_05_fused_kernels.cpp: chapter 05's checks. Untagged cases run without a GPU (the variant
// list, learning rate per size, bandwidth arithmetic, the bench's sweep sizes and CSV/JSON rows,
// both programs' usage errors); [gpu] cases train every variant at boundary sizes against the
// float64 reference and rerun the deterministic ones for bit-identical results; the bench's
// --trace layout and summary run on a fake op list, and on the GPU the trace file is checked op
// by op (variant 6's join included); [pytorch] runs the PyTorch script's GPU modes against the
// same reference.
#include "compute_capability.h"
#include "epoch_trace.h"
#include "exit_codes.h"
#include "fused_kernels.h"
#include "gpu_support.h"
#include "program_checks.h"
#include "regression_problem.h"
#include "regression_support.h"
#include "stream.h"
#include "sweep.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using namespace workbook;
using namespace workbook::fused;
using namespace workbook::testing;

namespace {

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

// The variants this GPU runs, in ladder order (7 needs clusters, 8 room on chip): the cases skip the rest.
std::vector<Variant> supported_variants(const FusedTraining& gpu) {
  std::vector<Variant> supported;
  for (Variant v : all_variants()) {
    if (gpu.supports(v)) supported.push_back(v);
  }
  return supported;
}

}  // namespace

TEST_CASE("sweep sizes: K and M suffixes, one-line refusals naming --sizes") {
  CHECK(parse_sizes("500,5K,5M,100M") == std::vector<std::int64_t>{500, 5'000, 5'000'000, 100'000'000});
  CHECK(parse_sizes("2") == std::vector<std::int64_t>{2});
  CHECK(parse_sizes("1025,50K") == std::vector<std::int64_t>{1025, 50'000});
  CHECK(parse_sizes("2G") == std::vector<std::int64_t>{2'000'000'000});
  for (const char* bad : {"", "1", "0", "-5", "5X", "50k", "05K", "5K,", ",5", "5K,,5M", ",", "abc", "3G", "5000000000", "1e6"}) {
    CAPTURE(bad);
    CHECK_THAT(refusal([&] { parse_sizes(bad); }), StartsWith("--sizes"));
  }
  const std::vector<std::int64_t> sizes = default_sweep_sizes();
  CHECK(sizes.front() == 500);
  CHECK(sizes.back() == 100'000'000);
  CHECK(std::is_sorted(sizes.begin(), sizes.end()));
  CHECK(std::count(sizes.begin(), sizes.end(), 5'000'000) == 1);
}

TEST_CASE("variants: all, or a list of 1..8 without repeats") {
  CHECK(parse_variants("all").size() == 8);
  CHECK(parse_variants("all").front() == Variant::kUnfused);
  CHECK(parse_variants("1,4,7") == std::vector<Variant>{Variant::kUnfused, Variant::kLastBlock, Variant::kPersistent});
  CHECK_THROWS_WITH(parse_variants("3,1,3"), "--variant: '3,1,3' lists 3 twice");
  CHECK(parse_variants("8") == std::vector<Variant>{Variant::kOnChip});
  CHECK(std::string(variant_name(Variant::kOnChip)) == "on_chip");
  for (const char* bad : {"", "0", "9", "1,,2", "x", "12", "1,"}) {
    CAPTURE(bad);
    CHECK_THAT(refusal([&] { parse_variants(bad); }), StartsWith("--variant"));
  }
  CHECK(std::string(variant_name(Variant::kGraph)) == "graph");
  CHECK_FALSE(is_deterministic(Variant::kAtomic));
  for (Variant v : {Variant::kBlockReduce, Variant::kLastBlock, Variant::kGraph, Variant::kStreams, Variant::kPersistent,
                    Variant::kOnChip}) {
    CHECK(is_deterministic(v));
  }
}

TEST_CASE("sweep learning rate keeps lr * E[x^2] at the article's value above 5M points") {
  CHECK(regression::scaled_lr(0.01, 500) == 0.01);
  CHECK(regression::scaled_lr(0.01, 5'000'000) == 0.01);
  CHECK(regression::scaled_lr(0.01, 10'000'000) == Catch::Approx(0.0025));
  CHECK(regression::scaled_lr(0.01, 100'000'000) == Catch::Approx(0.01 / 400));
  // And it is needed: the float64 reference diverges at 50M points with lr 0.01 ...
  regression::Config config;
  config.points = 50'000'000;
  config.epochs = 40;
  regression::Dataset d;
  d.split = regression::split_of(config.points);
  for (std::int64_t i = 0; i < config.points; i += 1000) {  // every 1000th point: the same range of X
    d.x.push_back(regression::x_at(i));
    d.y.push_back(regression::y_clean(d.x.back()));
  }
  d.split = regression::split_of(static_cast<std::int64_t>(d.x.size()));
  CHECK(regression::train_reference(d, config).diverged_at);
  // ... and converges with the scaled rate.
  config.lr = regression::scaled_lr(0.01, config.points);
  CHECK_FALSE(regression::train_reference(d, config).diverged_at);
}

TEST_CASE("bandwidth arithmetic: X and y bytes per epoch over the time") {
  CHECK(bytes_read_per_epoch(4'000'000) == 32e6);
  CHECK(achieved_gbps(4'000'000, 200, 1.0) == Catch::Approx(6400.0));  // 6.4 GB in 1 ms
  CHECK(achieved_gbps(80'000'000, 1, 0.16) == Catch::Approx(4000.0));
  CHECK(us_per_epoch(200, 1.0) == Catch::Approx(5.0));
}

TEST_CASE("CSV and JSON rows carry the measured and the derived columns") {
  SweepRow r;
  r.implementation = "cuda";
  r.variant = "last_block";
  r.points = 5'000'000;
  r.train_points = 4'000'000;
  r.epochs = 200;
  r.lr = 0.01;
  r.training.median = 2.0;
  r.training.min = 1.9;
  r.training.max = 2.5;
  r.training.count = 5;
  r.copy_gbps = 4000.0;
  r.passed = true;
  r.w = 0.75;
  r.b = 0.5;
  std::ostringstream csv;
  write_csv(csv, {r, r});
  std::istringstream lines(csv.str());
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  CHECK(header == csv_header());
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
  CHECK(row == "cuda,last_block,5000000,4000000,200,0.01,2,1.9,2.5,5,10,3200,4000,0.8,1,0.75,0.5");
  const std::string text = csv.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  const nlohmann::json j = to_json(r);
  CHECK(j["gbps"].get<double>() == Catch::Approx(3200.0));
  CHECK(j["copy_fraction"].get<double>() == Catch::Approx(0.8));
  CHECK(j["us_per_epoch"].get<double>() == Catch::Approx(10.0));
  CHECK(j["training_ms"] == nlohmann::json({{"median", 2.0}, {"min", 1.9}, {"max", 2.5}, {"runs", 5}}));
  CHECK_FALSE(j.contains("median_ms"));  // the time is one object, not four keys
  CHECK(j["passed"] == true);
  SweepRow untimed = r;  // its check failed: no time to write
  untimed.training = Stats{};
  untimed.passed = false;
  CHECK_FALSE(to_json(untimed).contains("training_ms"));
}

TEST_CASE("trace layout: variants 1, 3, 4, 6 of the selection, one track per stream, grouped by variant") {
  const TraceLayout all = trace_layout(all_variants());
  REQUIRE(all.variants == std::vector<Variant>{Variant::kUnfused, Variant::kBlockReduce, Variant::kLastBlock,
                                               Variant::kStreams});
  CHECK(all.first_track == std::vector<int>{0, 1, 2, 3});
  REQUIRE(all.tracks.size() == 4u + kStreamCount);
  CHECK(all.tracks[0] == "1 unfused: stream");
  CHECK(all.tracks[2] == "4 last_block: stream");
  CHECK(all.tracks[3] == "6 streams: stream 0 (update)");
  CHECK(all.tracks.back() == "6 streams: side stream " + std::to_string(kStreamCount));
  // 03's plot_trace.py draws one panel per "group:" prefix: every track has exactly one colon.
  for (const std::string& t : all.tracks) CHECK(std::count(t.begin(), t.end(), ':') == 1);

  const TraceLayout picked = trace_layout({Variant::kPersistent, Variant::kStreams, Variant::kGraph, Variant::kUnfused});
  CHECK(picked.variants == std::vector<Variant>{Variant::kStreams, Variant::kUnfused});
  CHECK(picked.first_track == std::vector<int>{0, 1 + kStreamCount});
  CHECK_THAT(refusal([] { trace_layout({Variant::kGraph, Variant::kPersistent, Variant::kAtomic}); }),
             StartsWith("--trace"));
  CHECK(traced_ops_per_epoch(Variant::kUnfused) == 4);
  CHECK(traced_ops_per_epoch(Variant::kBlockReduce) == 2);
  CHECK(traced_ops_per_epoch(Variant::kLastBlock) == 1);
  CHECK(traced_ops_per_epoch(Variant::kStreams) == kStreamCount + 1);
  CHECK(traced_ops_per_epoch(Variant::kGraph) == 0);
}

TEST_CASE("trace summary from a fake op list: span per epoch, overlapping streams counted once") {
  const TraceLayout layout = trace_layout({Variant::kUnfused, Variant::kStreams});
  std::vector<TraceOp> ops;
  // Variant 1, 2 epochs of 2 ops: busy 0-8, 10-18 | 20-28, 30-38; idle gaps of 2 us.
  for (int e = 0; e < 2; ++e) {
    ops.push_back({"e" + std::to_string(e) + " forward", "compute", 0, 20.0 * e, 8.0});
    ops.push_back({"e" + std::to_string(e) + " step", "step", 0, 20.0 * e + 10.0, 8.0});
  }
  // Variant 6, 2 epochs: four side streams run 100-110 side by side (one starts late, 104-112),
  // the update 113-115 after the join; then 120-130 and 133-135.
  for (int e = 0; e < 2; ++e) {
    const double t0 = 100.0 + 20.0 * e;
    for (int k = 1; k <= kStreamCount; ++k) {
      ops.push_back({"segment", "compute", 1 + k, t0 + (k == 2 ? 4.0 : 0.0), k == 2 ? 8.0 : 10.0});
    }
    ops.push_back({"update", "step", 1, t0 + 13.0, 2.0});
  }
  const std::vector<TracedVariant> s = summarize_trace(ops, layout, 2);
  REQUIRE(s.size() == 2);
  CHECK(s[0].variant == Variant::kUnfused);
  CHECK(s[0].ops == 4);
  CHECK(s[0].epoch_us == Catch::Approx(19.0));  // 0 to 38 over 2 epochs
  CHECK(s[0].busy_us == Catch::Approx(16.0));
  CHECK(s[1].ops == 2 * (kStreamCount + 1));
  CHECK(s[1].epoch_us == Catch::Approx(17.5));  // 100 to 135
  CHECK(s[1].busy_us == Catch::Approx(14.0));   // 12 + 2 per epoch

  // The writer takes the layout as it is: one metadata event per track, one "X" per op.
  const nlohmann::json trace = chrome_trace(ops, layout.tracks);
  int complete = 0, named = 0;
  for (const auto& e : trace["traceEvents"]) {
    complete += e["ph"] == "X";
    named += e["name"] == "thread_name";
  }
  CHECK(complete == static_cast<int>(ops.size()));
  CHECK(named == static_cast<int>(layout.tracks.size()));
}

namespace {

// Runs `program` with each argument list; every one must be refused with one line and exit 2.
void check_usage_errors(const char* program, const std::vector<std::vector<std::string>>& cases) {
  for (const std::vector<std::string>& args : cases) check_one_line(with_args({program}, args), 2, Stdout::kEmpty);
}

}  // namespace

TEST_CASE("programs: --help, bad input is one line and exit 2, no GPU is exit 77") {
  const ProgramResult help = run_program({WORKBOOK_PROGRAM, "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, ContainsSubstring("--variant") && ContainsSubstring("--repeats"));
  const ProgramResult bench_help = run_program({WORKBOOK_BENCH_PROGRAM, "--help"});
  CHECK(bench_help.exit_code == 0);
  CHECK_THAT(bench_help.out, ContainsSubstring("--sweep") && ContainsSubstring("--trace") && ContainsSubstring("--breakdown"));
  check_usage_errors(WORKBOOK_PROGRAM,
                     {{"--variant", "9"}, {"--variant", "0"}, {"--repeats", "0"}, {"--copy-mib", "0"}, {"--points", "1"},
                      {"--lr", "nan"}, {"--epochs", "0"}, {"--bogus"}, {"--points", "50X"}, {"--points", "5e6"},
                      {"--variant", "1,,4"}, {"--variant", "4,"}, {"--copy-mib", "1X"}, {"--copy-mib", "17K"},
                      {"--device", "cuda:"}, {"--device", "cpu"}, {"--seed", "-1"}, {"--sweep"}, {"--trace", "t.json"}});
  check_usage_errors(WORKBOOK_BENCH_PROGRAM,
                     {{"--variant", "9"}, {"--sweep", "--sizes", "1"}, {"--sweep", "--sizes", "5Q"}, {"--repeats", "0"},
                      {"--breakdown", "--sizes", "5K"}, {"--trace"}, {"--trace", ""}, {"--trace", "t.json", "--variant", "5,7"},
                      {"--sweep", "--sizes", "1,,2"}, {"--sweep", "--sizes", ",5K"}, {"--sweep", "--sizes", "5K,"},
                      {"--sweep", "--sizes", ""}, {"--sweep", "--csv", ""}, {"--breakdown", "--csv", "x.csv"}, {"--bogus"},
                      {"--device", "cpu"}, {"--seed", "-1"}, {"--trace", "/no/such/folder/t.json"}, {"--trace", "."},
                      {"--sweep", "--csv", "/no/such/folder/s.csv"}, {"--sweep", "--csv", "."}, {"--json", "."},
                      {"--sweep", "--csv", "s.json"}, {"--print-every", "5"}, {"--trace", "t.json", "--json", "./t.json"},
                      {"--sweep", "--points", "5M"}, {"--barrier", "--variant", "8"}, {"--seed", "7"}});
  for (const char* program : {WORKBOOK_PROGRAM, WORKBOOK_BENCH_PROGRAM}) check_no_gpu({program, "--quick"});
}

TEST_CASE("program: the README's sizes (50K, 5M) and every device form are accepted; no GPU is exit 77") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--points", "50K"}, {"--points", "5M", "--variant", "4"}, {"--device", "cuda:0"},
        {"--device", "cuda"}, {"--device", "2"}, {"--copy-mib", "1K"}}) {
    check_no_gpu(with_args({WORKBOOK_PROGRAM, "--quick"}, args), "fused_kernels");
  }
  const ProgramResult sweep =
      run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--sweep", "--sizes", "500,5K,2"}, without_gpus());
  CHECK(sweep.exit_code == 77);
  CHECK_THAT(sweep.err, StartsWith("fused_kernels_bench needs a CUDA GPU: "));
}

TEST_CASE("every variant matches the reference at boundary sizes; 3-8 rerun bit-identically", "[gpu]") {
  require_gpus(1);
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  // One more than a multiple of the fused grid's threads (sms x 4 blocks x 256), in training points:
  // train = 4 T + 1 for points = 5 T + 2.
  const std::int64_t grid_threads = static_cast<std::int64_t>(sms) * 4 * 256;
  const std::int64_t points = GENERATE_COPY(2, 5, 1023, 1024, 1025, 5 * grid_threads + 2, 1'000'003);
  CAPTURE(points);
  regression::Config config;
  config.points = points;
  if (points == 5 * grid_threads + 2) REQUIRE(regression::split_of(points).train == 4 * grid_threads + 1);
  Stream stream;
  FusedTraining gpu(config, stream.get());
  const TrainingResult want = regression::train_reference(gpu.copy_dataset(), config);
  for (Variant v : supported_variants(gpu)) {
    CAPTURE(variant_name(v));
    const TrainingResult got = gpu.train(v);
    require_matches_reference(got, want);
    if (is_deterministic(v)) {
      const TrainingResult again = gpu.train(v);
      CHECK(again.w == got.w);
      CHECK(again.b == got.b);
      CHECK(again.losses == got.losses);
      CHECK(again.test_mse == got.test_mse);
    }
  }
}

TEST_CASE("every variant diverges at the reference's epoch with lr 1.0", "[gpu]") {
  require_gpus(1);
  regression::Config config;
  config.points = 1'000'000;
  config.epochs = 30;
  config.lr = 1.0;
  Stream stream;
  FusedTraining gpu(config, stream.get());
  const TrainingResult want = regression::train_reference(gpu.copy_dataset(), config);
  REQUIRE(want.diverged_at);
  for (Variant v : supported_variants(gpu)) {
    CAPTURE(variant_name(v));
    const TrainingResult got = gpu.train(v);
    REQUIRE(got.diverged_at);
    CHECK(*got.diverged_at == *want.diverged_at);
  }
}

TEST_CASE("launch shapes: grid from the SM count; kernels per epoch 6, 2, 2, 1, 5, and none for 5, 7 and 8", "[gpu]") {
  require_gpus(1);
  int sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  regression::Config config;
  config.points = 5'000'000;
  config.epochs = 2;
  Stream stream;
  FusedTraining gpu(config, stream.get());
  CHECK(gpu.shape(Variant::kLastBlock).blocks == 4 * sms);
  // Kernels per epoch, counted by CUDA in a captured epoch: the ladder's point.
  CHECK(gpu.kernels_per_epoch(Variant::kUnfused) == 6);  // forward, loss (2), backward (2), step
  CHECK(gpu.kernels_per_epoch(Variant::kAtomic) == 2);
  CHECK(gpu.kernels_per_epoch(Variant::kBlockReduce) == 2);
  CHECK(gpu.kernels_per_epoch(Variant::kLastBlock) == 1);
  CHECK(gpu.kernels_per_epoch(Variant::kStreams) == kStreamCount + 1);  // (5, 7 and 8: 0 by construction)
  CHECK(gpu.shape(Variant::kStreams).blocks == sms);
  if (gpu.supports(Variant::kPersistent)) {
    CHECK(gpu.shape(Variant::kPersistent).blocks >= 8);
    CHECK(gpu.shape(Variant::kPersistent).blocks <= 16);
  }

}

TEST_CASE("variant 8: its room from the device, the data on chip below it (in shared memory too), a one-line skip above it", "[gpu]") {
  require_gpus(1);
  int sms = 0, cooperative = 0;
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0) == cudaSuccess);
  if (cooperative == 0) SKIP("this GPU has no cooperative launch");
  regression::Config config;
  config.points = 1'000'003;
  config.epochs = 3;
  Stream stream;
  const OnChipCapacity room = [&] {
    FusedTraining gpu(config, stream.get());
    CHECK(gpu.supports(Variant::kOnChip));
    CHECK(gpu.shape(Variant::kOnChip).blocks == gpu.on_chip_capacity().blocks);
    return gpu.on_chip_capacity();
  }();
  CHECK(room.blocks % sms == 0);  // whole SMs: the occupancy API's blocks per SM, times the SMs
  CHECK(room.register_bytes == static_cast<std::int64_t>(room.blocks) * kOnChipThreads * kOnChipRegisterFloat4 * 32);
  CHECK(room.shared_bytes > 0);
  // Halfway into the shared-memory part of the room: every block keeps some of its slice in
  // shared memory, a path no smaller size takes (the sizes above fit in registers). Trained and
  // checked as every variant is, twice for the same bits.
  config.points = (room.register_bytes + room.shared_bytes / 2) / 8 * 5 / 4;
  {
    FusedTraining half_shared(config, stream.get());
    CAPTURE(config.points);
    REQUIRE(half_shared.supports(Variant::kOnChip));
    REQUIRE(regression::split_of(config.points).train * 8 > room.register_bytes);
    const TrainingResult want = regression::train_reference(half_shared.copy_dataset(), config);
    const TrainingResult got = half_shared.train(Variant::kOnChip);
    require_matches_reference(got, want);
    const TrainingResult again = half_shared.train(Variant::kOnChip);
    CHECK(again.w == got.w);
    CHECK(again.b == got.b);
  }
  // One float4 pair per block more than the room: skipped, with the megabytes in the reason.
  config.points = (room.points() + 4 * room.blocks) * 5 / 4;
  config.epochs = 1;
  FusedTraining too_big(config, stream.get());
  CHECK_FALSE(too_big.supports(Variant::kOnChip));
  CHECK_THAT(too_big.skip_reason(Variant::kOnChip), StartsWith("does not fit on chip: ") && ContainsSubstring(" MB needed, "));
  CHECK_THROWS_WITH(too_big.train(Variant::kOnChip), ContainsSubstring("does not fit on chip"));
}

TEST_CASE("programs on the GPU: the lesson, the bench's sweep and breakdown, PASS with JSON and CSV", "[gpu]") {
  const std::string json = temp_path("fused.json");
  const ProgramResult single = run_program({WORKBOOK_PROGRAM, "--quick", "--json", json});
  skip_if_no_gpu(single);
  CAPTURE(single.out, single.err);
  CHECK(single.exit_code == 0);
  CHECK(last_line(single.out) == "PASS");
  const nlohmann::json j = read_json(json);
  REQUIRE(j["variants"].size() == 8);
  CHECK_THAT(single.out, ContainsSubstring("on chip (variant 8): "));
  for (const auto& row : j["variants"]) {
    CAPTURE(row.dump());
    if (row["check"] != "ok") continue;  // variant 7 on a GPU without clusters
    CHECK(row["passed"] == true);
    check_timing(row["training_ms"], 2);  // --quick: 2 timed runs (variant 2 at most 3)
    CHECK(row.contains("w_error"));
  }
  CHECK(j["copy_gbps"].get<double>() > 0);
  CHECK(j["quick"] == true);
  CHECK(j["points"] == 20'011);
  CHECK(j["device"].get<std::string>().find("(") == std::string::npos);  // the GPU's name alone
  for (const char* step : {"== 1. ", "== 2. ", "== 3. "}) CHECK_THAT(single.out, ContainsSubstring(step));

  const std::string bench_json = temp_path("bench.json");
  const std::string csv = temp_path("sweep.csv");
  const ProgramResult bench = run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--csv", csv, "--json", bench_json});
  CAPTURE(bench.out, bench.err);
  CHECK(bench.exit_code == 0);
  const nlohmann::json s = read_json(bench_json);
  CHECK(s["sweep"].size() >= 21);  // 3 sizes x 8 variants (7 without clusters)
  for (const auto& row : s["sweep"]) {
    CHECK(row["passed"] == true);
    check_timing(row["training_ms"], 2);  // --quick: 2 timed runs
  }
  CHECK(s["quick"] == true);
  // The default modes include --barrier: five kinds, each measured (a time, not judged) or skipped
  // with its reason; grid.sync(), the counter and the kernel boundary run on every GPU of variant 8.
  REQUIRE(s["barrier"].size() == 5);
  for (const auto& row : s["barrier"]) {
    CAPTURE(row.dump());
    CHECK(row.contains("ns") != row.contains("skipped"));
    if (row.contains("ns")) {
      CHECK(row["check"] == "ok");  // every block saw every block's post of every round
      CHECK(std::isfinite(row["ns"].get<double>()));
    }
  }
  for (int k : {0, 1, 4}) CHECK(s["barrier"][k].contains("ns"));
  // Variant 8's epoch beside them, checked against the reference before it was timed.
  CHECK(s["on_chip_epoch_us"].get<double>() > 0);
  // --breakdown: each operation of variants 1 and 3 per epoch, then each variant's total.
  std::map<std::string, std::vector<std::string>> operations;
  for (const auto& row : s["breakdown"]) {
    CAPTURE(row.dump());
    operations[row["variant"].get<std::string>()].push_back(row["operation"].get<std::string>());
    check_timing(row["time_us"], 20 - kTraceWarmupEpochs);  // --quick: 20 epochs, the first untraced
  }
  CHECK(operations["1 unfused"] == std::vector<std::string>{"forward", "loss", "backward", "step", "total"});
  REQUIRE_FALSE(operations["3 block_reduce"].empty());
  CHECK(operations["3 block_reduce"].back() == "total");
  CHECK(std::count(operations["3 block_reduce"].begin(), operations["3 block_reduce"].end(), "update") == 1);

  const ProgramResult bad = run_program({WORKBOOK_PROGRAM, "--device", "99", "--quick"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, StartsWith("error: --device 99: cudaErrorInvalidDevice: invalid device ordinal; this machine has "));
  CHECK(run_program({WORKBOOK_PROGRAM, "--device", "cuda:99", "--quick"}).exit_code == 2);

  // More points than the GPU holds: one line before any allocation, not a cudaMalloc error.
  const ProgramResult huge = check_one_line({WORKBOOK_PROGRAM, "--points", "100G", "--variant", "4"}, 1,
                                            StartsWith("error: --points 100000000000 with --copy-mib 1024 needs ") &&
                                                ContainsSubstring("MiB are free on device 0"));
  CHECK_THAT(huge.err, !ContainsSubstring(".cu:"));  // a reason, not a source location
}

TEST_CASE("bench --trace: a Chrome trace with one event per recorded op, variant 6 joined before its update",
          "[gpu]") {
  const std::string trace = temp_path("trace.json");
  const std::string json = temp_path("fused_trace.json");
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "--quick", "--trace", trace, "--json", json});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  require_pass(r);
  const TraceLayout layout = trace_layout(all_variants());
  const nlohmann::json t = read_json(trace);
  std::map<int, std::string> names;
  std::map<int, std::vector<std::pair<double, double>>> ops;  // track -> (start, duration), in file order
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X") ops[e["tid"].get<int>()].emplace_back(e["ts"].get<double>(), e["dur"].get<double>());
  }
  REQUIRE(names.size() == layout.tracks.size());
  for (std::size_t k = 0; k < layout.tracks.size(); ++k) CHECK(names[static_cast<int>(k)] == layout.tracks[k]);
  // Per track: variant 1 four ops per epoch, 3 two, 4 one, 6 one on each of its streams.
  const std::vector<int> per_epoch{4, 2, 1, 1, 1, 1, 1, 1};
  std::size_t total = 0;
  for (std::size_t k = 0; k < per_epoch.size(); ++k) {
    auto& track = ops[static_cast<int>(k)];
    CAPTURE(layout.tracks[k]);
    CHECK(track.size() == static_cast<std::size_t>(kTracedEpochs * per_epoch[k]));
    std::sort(track.begin(), track.end());
    for (std::size_t i = 0; i < track.size(); ++i) {
      CHECK(track[i].first >= 0.0);
      CHECK(track[i].second > 0.0);
      if (i > 0) CHECK(track[i].first >= track[i - 1].first + track[i - 1].second - 0.01);  // one stream: in order
    }
    total += track.size();
  }
  CHECK(read_json(json)["trace"]["operations"].get<std::size_t>() == total);
  // Variant 6's join: each epoch's update starts after all four segments of that epoch have ended
  // (0.5 us of slack for the event timer's resolution).
  const int update_track = layout.first_track[3];
  for (int e = 0; e < kTracedEpochs; ++e) {
    const double update_start = ops[update_track][e].first;
    for (int k = 1; k <= kStreamCount; ++k) {
      const auto& segment = ops[update_track + k][e];
      CAPTURE(e, k, update_start, segment.first, segment.second);
      CHECK(update_start >= segment.first + segment.second - 0.5);
    }
  }
}

TEST_CASE("PyTorch eager, graph replay and torch.compile match the float64 reference", "[pytorch]") {
  require_torch_cuda(WORKBOOK_PYTHON);
  require_gpus(1);
  const std::string theirs = temp_path("torch.json");
  const ProgramResult b = run_program({WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_fused.py",
                                       "--quick", "--modes", "eager,graph,compile", "--json", theirs});
  CAPTURE(b.out, b.err);
  REQUIRE(b.exit_code == 0);
  const nlohmann::json t = read_json(theirs);
  regression::Config quick;  // the script's --quick problem, as the programs' --quick
  quick.points = 20'011;
  quick.epochs = 20;
  const TrainingResult want = regression::train_reference(regression::make_dataset_cpu(quick), quick);
  const double w = want.w, bias = want.b;
  REQUIRE(t["sweep"].size() == 3);
  CHECK(t["quick"] == true);
  for (const auto& row : t["sweep"]) {
    CAPTURE(row.dump());
    CHECK(row["passed"] == true);
    check_timing(row["training_ms"], 1);  // --quick: 1 timed run
    CHECK(within(row["w"].get<double>(), w, regression::kParameterTolerance));
    CHECK(within(row["b"].get<double>(), bias, regression::kParameterTolerance));
  }
}

// ------------------------------------------------------------------ GPUs older than Hopper
// WORKBOOK_PRETEND_COMPUTE_CAPABILITY (common/compute_capability.h) lowers the capability the
// program acts on, so that these cases show an Ampere (8.0) or Ada (8.9) reader's run on a Hopper GPU.

TEST_CASE("program: a malformed WORKBOOK_PRETEND_COMPUTE_CAPABILITY is one line and exit 2") {
  for (const char* bad : {"eight", "8", "8.0.1", "9,0"}) {
    check_one_line({WORKBOOK_PROGRAM, "--quick"}, 2,
                   StartsWith("error: WORKBOOK_PRETEND_COMPUTE_CAPABILITY must be MAJOR.MINOR"), Stdout::kEmpty,
                   {{kPretendCapabilityVariable, bad}});
  }
}

namespace {

// The skip reason's start: the same whichever capability below 9.0 the GPU has (or pretends).
constexpr const char* kClusterReason =
    "needs thread-block clusters and distributed shared memory, compute capability 9.0 (Hopper) or newer; this GPU is ";

// Sets an environment variable for this process until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("an older GPU: variant 7 is not offered, every other variant still matches the reference", "[gpu]") {
  require_gpus(1);
  const char* pretend = GENERATE("8.0", "8.9");
  CAPTURE(pretend);
  const ScopedEnv older(kPretendCapabilityVariable, pretend);
  regression::Config config;
  config.points = 100'003;
  config.epochs = 30;
  Stream stream;
  FusedTraining gpu(config, stream.get());
  REQUIRE_FALSE(gpu.supports(Variant::kPersistent));
  CHECK_THAT(gpu.skip_reason(Variant::kPersistent), StartsWith(kClusterReason));
  CHECK_THROWS_WITH(gpu.train(Variant::kPersistent), ContainsSubstring(kClusterReason));
  const TrainingResult want = regression::train_reference(gpu.copy_dataset(), config);
  for (Variant v : all_variants()) {
    if (v == Variant::kPersistent) continue;
    CAPTURE(variant_name(v));
    CHECK(gpu.skip_reason(v).empty());
    require_matches_reference(gpu.train(v), want);
  }
}

TEST_CASE("program on an older GPU: variant 7 skipped with its reason in text and JSON, the rest checked, PASS",
          "[gpu]") {
  const std::string pretend = GENERATE("8.0", "8.9");
  CAPTURE(pretend);
  const std::string json = temp_path("older.json");
  const ProgramResult r =
      run_program({WORKBOOK_PROGRAM, "--quick", "--json", json}, {{kPretendCapabilityVariable, pretend}});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  require_pass(r);
  // The table's row of variant 7: its number and name, then the reason in place of the numbers.
  const std::size_t at = r.out.find("  7  persistent ");
  REQUIRE(at != std::string::npos);
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  CHECK_THAT(line, ContainsSubstring(std::string("skipped: ") + kClusterReason));
  const nlohmann::json j = read_json(json);
  CHECK(j["passed"] == true);
  REQUIRE(j["variants"].size() == 8);
  for (const auto& row : j["variants"]) {
    CAPTURE(row.dump());
    if (row["variant"] == 7) {
      CHECK(row["name"] == "persistent");
      CHECK_THAT(row["check"].get<std::string>(), StartsWith(std::string("skipped: ") + kClusterReason));
      CHECK_FALSE(row.contains("training_ms"));
    } else {
      CHECK(row["check"] == "ok");
      CHECK(row["passed"] == true);
      CHECK(row.contains("training_ms"));
    }
  }
  // On a Hopper GPU the device line says the capability was lowered, and to what.
  int major = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  if (major >= 9) {
    CHECK_THAT(r.out, ContainsSubstring("treated as cc " + pretend + " (WORKBOOK_PRETEND_COMPUTE_CAPABILITY)"));
    CHECK_THAT(j["variants"][6]["check"].get<std::string>(), ContainsSubstring("this GPU is " + pretend));
  }
}

TEST_CASE("sweep on an older GPU: no variant 7 rows, the skip said once, every other row checked", "[gpu]") {
  const std::string pretend = GENERATE("8.0", "8.9");
  CAPTURE(pretend);
  const std::string json = temp_path("older_sweep.json");
  const std::string csv = temp_path("older_sweep.csv");
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "--sweep", "--quick", "--csv", csv, "--json", json},
                                      {{kPretendCapabilityVariable, pretend}});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  require_pass(r);
  CHECK_THAT(r.out, ContainsSubstring(std::string("  7 persistent skipped: ") + kClusterReason));
  const nlohmann::json s = read_json(json);
  CHECK(s["sweep"].size() == 3 * 7);  // 3 sizes x variants 1-6 and 8 (cooperative launch needs no cc 9.0)
  for (const auto& row : s["sweep"]) {
    CHECK(row["variant"] != "persistent");
    CHECK(row["passed"] == true);
  }
  REQUIRE(s["skipped"].size() == 1);
  CHECK(s["skipped"][0]["variant"] == 7);
  CHECK_THAT(s["skipped"][0]["skipped"].get<std::string>(), StartsWith(kClusterReason));
}

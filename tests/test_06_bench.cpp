// test_06_bench.cpp: chapter 06's bench, multi_gpu_bench. Untagged cases run without a GPU: the
// busbw arithmetic, the all-reduce sizes, the --exchange names, the list and ddp flags, the
// bench's usage errors. [gpu] and [multigpu] cases run it: its JSON, every way of the exchange
// alone exact (each a plug-in, bench/exchange_alone.h), every epoch checked, every element of
// every rank's all-reduce exact.
#include "bench/bench_plan.h"
#include "exit_codes.h"
#include "support/exchange.h"
#include "test_06.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

TEST_CASE("bench: usage errors are exit 2 with a one-line reason") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bench_cases = {
      {{"ddp", "--fault-signal", "stop"}, "--fault-signal and --fault-after-s go with --fault-rank"},
      {{"exchange-rank"}, "exchange-rank is one rank of `multi_gpu_bench exchange`, which starts it"},
      {{"ddp", "--fault-rank", "0", "--fault-signal", "term"}, "--fault-signal must be kill or stop, got 'term'"},
      {{"ddp", "--fault-rank", "0", "--fault-after-s", "-1"}, "--fault-after-s"},
      {{"--timeout-s", "0"}, "--timeout-s"},
      {{"--timeout-s", "1e30"}, "--timeout-s must be at most 86400, got 1e+30"},
      {{"--max-bytes", "6"}, "--max-bytes"},
      {{"--strong", "1"}, "--strong"},
      {{"--factor", "1"}, "--factor"},
      {{"nonsense"}, "nonsense"},
      {{"ddp", "--nproc", "2", "--fault-rank", "5"}, "rank 5 does not exist among 2"},
      {{"--gpus", "2", "ddp", "--fault-rank", "2"}, "rank 2 does not exist among 2"},
      {{"ddp", "--nproc", "4", "--gpus", "2"}, "--nproc 4 needs one GPU per rank, but --gpus is 2"},
      {{"allreduce", "--nproc", "2"}, "are for ddp"},
      {{"scaling", "--strong", "5M,,100M"}, "--strong: '5M,,100M' has an empty item"},
      {{"--weak", ",100M"}, "--weak: ',100M' has an empty item"},
      {{"--gpu-counts", "1,2,"}, "--gpu-counts: '1,2,' has an empty item"},
      {{"--gpu-counts", "1,2K"}, "--gpu-counts: '2K' is not a whole number"},
      {{"ddp", "--points", "5X"}, "--points: '5X' is not a size"},
      {{"--max-bytes", "1X"}, "--max-bytes: '1X' is not a size"},
      {{"--max-bytes", "9G"}, "--max-bytes must be at most 8589934592, got 9000000000"},
      {{"--min-bytes", "2K", "--max-bytes", "1K"}, "--max-bytes must be at least 2000, got 1000"},
      {{"--reference-max", "1Q"}, "--reference-max: '1Q' is not a size"},
      {{"--copy-mib", "-1"}, "--copy-mib: '-1' is not a size"},
      {{"--device", "gpu"}, "--device must be N, cuda or cuda:N"},
      {{"ddp", "--exchange", "symm"}, "--exchange must be nccl, nccl_symmetric or one_shot, got 'symm'"},
      {{"scaling", "--exchange", "nccl,ring"}, "--exchange must be nccl, nccl_symmetric or one_shot, got 'ring'"},
      {{"scaling", "--exchange", "one_shot,one_shot"}, "--exchange: 'one_shot,one_shot' lists one_shot twice"},
      {{"scaling", "--exchange", "nccl,"}, "--exchange: 'nccl,' has an empty item"},
      {{"ddp", "--exchange", "nccl,one_shot"}, "--exchange nccl,one_shot: a list is for scaling; ddp runs one way at a time"},
      {{"exchange", "--exchange-points", "5M,,1"}, "--exchange-points: '5M,,1' has an empty item"},
      // a flag the named part does not read, and a count of 0 (leaving the flag out means all)
      {{"topology", "--points", "5M"}, "--points is for ddp, not topology"},
      {{"topology", "--weak", "5M"}, "--weak is for scaling, not topology"},
      {{"allreduce", "--exchange", "one_shot"}, "--exchange is for ddp and scaling, not allreduce"},
      {{"exchange", "--max-bytes", "1K"}, "--max-bytes is for allreduce, not exchange"},
      {{"ddp", "--copy-mib", "8"}, "--copy-mib is for topology, not ddp"},
      {{"--gpus", "0"}, "--gpus must be at least 1, got 0"},
      {{"ddp", "--nproc", "0"}, "--nproc must be at least 1, got 0"},
      {{"scaling", "--gpu-counts", "1,2,1"}, "--gpu-counts: '1,2,1' lists 1 twice"},
      {{"ddp", "--on-chip", "--exchange", "nccl_symmetric"}, "--on-chip exchanges the sums by one_shot"},
      {{"scaling", "--on-chip"}, "--on-chip is for ddp, not scaling"},
      {{"exchange", "--one-gpu-sweep", "/nonexistent/sweep.json"}, "--one-gpu-sweep /nonexistent/sweep.json: no such file"},
      {{"exchange", "--one-gpu-sweep", "/tmp"}, "--one-gpu-sweep /tmp: is a folder, not a file"},
      {{"exchange", "--one-gpu-sweep", WORKBOOK_CHAPTER_DIR "/README.md"}, "README.md: not JSON"},
      {{"exchange", "--one-gpu-sweep", WORKBOOK_CHAPTER_DIR "/results/exchange.json"},
       "not the JSON of `fused_kernels_bench --sweep` (chapter 05)"},
      {{"exchange", "--on-chip-points", "1M,1M"}, "--on-chip-points: '1M,1M' lists 1M twice"},
      {{"ddp", "--fault-rank", "1", "--fault-after-s", "inf"}, "--fault-after-s must be a finite number of seconds"},
      {{"ddp", "--launch-timeout-s", "inf"}, "--launch-timeout-s must be a finite number greater than 0, got inf"},
      {{"ddp", "--launch-timeout-s", "0"}, "--launch-timeout-s must be a finite number greater than 0, got 0"},
      {{"ddp", "--fault-after-s", "1e9"}, "--fault-after-s must be at most 86400, got 1e+09"},
      {{"ddp", "--seed", "3"}, "--seed seeds --noise: without it it changes nothing"},
  };
  for (const auto& [args, message] : bench_cases) {
    check_usage_error(with_args({WORKBOOK_BENCH_PROGRAM}, args), message, Stdout::kEmpty, without_gpus());
  }
  const ProgramResult bench_help = run_program({WORKBOOK_BENCH_PROGRAM, "--help"});
  CHECK(bench_help.exit_code == 0);
  CHECK_THAT(bench_help.out, ContainsSubstring("--fault-rank") && ContainsSubstring("scaling") &&
                                 ContainsSubstring("--exchange-points"));
}

TEST_CASE("busbw = algbw * 2(n-1)/n, as nccl-tests reports it") {
  CHECK(bus_factor(1) == 0.0);
  CHECK(bus_factor(2) == 1.0);
  CHECK(bus_factor(4) == 1.5);
  CHECK(bus_factor(8) == 1.75);
  // 1 GiB in 4 ms: 268.4 GB/s algorithm bandwidth; on 4 GPUs 402.7 GB/s on the bus.
  const double algbw = algorithm_bandwidth_gbps(1073741824.0, 4.0);
  CHECK(std::fabs(algbw - 268.435456) < 1e-9);
  CHECK(std::fabs(bus_bandwidth(algbw, 4) - 402.653184) < 1e-9);
  CHECK(bus_bandwidth(algbw, 1) == 0.0);
}

TEST_CASE("all-reduce sizes: 8 B to 1 GiB by 2, and --quick's 8 B to 64 MiB by 8") {
  const auto full = allreduce_sizes(8, std::size_t{1} << 30, 2);
  CHECK(full.size() == 28);
  CHECK(full.front() == 8);
  CHECK(full.back() == std::size_t{1} << 30);
  const auto quick = allreduce_sizes(8, 64 << 20, 8);
  CHECK(quick == std::vector<std::size_t>{8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864});
  CHECK(allreduce_sizes(12, 12, 2) == std::vector<std::size_t>{12});
  CHECK_THROWS(allreduce_sizes(6, 64, 2));
  CHECK_THROWS(allreduce_sizes(8, 64, 1));
}

TEST_CASE("exchange: three names, and anything else is bad usage naming them") {
  for (ExchangeKind k : {ExchangeKind::kNccl, ExchangeKind::kNcclSymmetric, ExchangeKind::kOneShot}) {
    CAPTURE(exchange_name(k));
    CHECK(parse_exchange(exchange_name(k)) == k);
  }
  CHECK(std::string(exchange_name(ExchangeKind::kOneShot)) == "one_shot");
  for (const char* bad : {"", "ring", "NCCL", "one-shot", "symm_mem", "nccl "}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_exchange(bad), UsageError);
    CHECK_THROWS_WITH(parse_exchange(bad), "--exchange must be nccl, nccl_symmetric or one_shot, got '" +
                                               std::string(bad) + "'");
  }
}

TEST_CASE("list flags: counts and point sizes, refused with the flag's name") {
  CHECK(parse_int_list("1,2,4", "--gpu-counts") == std::vector<int>{1, 2, 4});
  CHECK(parse_point_list("5M,100M", "--strong") == std::vector<std::int64_t>{5'000'000, 100'000'000});
  CHECK(usable_gpu_counts({1, 2, 4}, 2) == std::vector<int>{1, 2});
  CHECK(usable_gpu_counts({4, 4, 1}, 8) == std::vector<int>{4, 1});
  CHECK(parse_point_list("200K,2G", "--weak") == std::vector<std::int64_t>{200'000, 2'000'000'000});
  for (const char* bad : {"", "0", "1,,2", ",1", "1,", "x", "2K", "1025"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_int_list(bad, "--gpu-counts"), UsageError);
  }
  for (const char* bad : {"1", "5M,,100M", ",5M", "5M,", "5X", "3G"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(parse_point_list(bad, "--weak"), StartsWith("--weak"));
  }
  CHECK(std::fabs(weak_efficiency(100.0, 105.0) - 100.0 / 105.0) < 1e-12);
  CHECK(std::fabs(strong_efficiency(100.0, 30.0, 4) - 100.0 / 120.0) < 1e-12);
}

TEST_CASE("ddp flags: --fault-rank names a rank, --nproc fits --gpus, both only where ddp runs") {
  CHECK_NOTHROW(check_ddp_flags(2, 0, 1, DdpRuns::kYes));
  CHECK_NOTHROW(check_ddp_flags(0, 0, 7, DdpRuns::kYes));  // ranks = GPUs found: checked later
  CHECK_NOTHROW(check_ddp_flags(0, 2, -1, DdpRuns::kNo));
  CHECK_THROWS_WITH(check_ddp_flags(2, 0, 5, DdpRuns::kYes),
                    "--fault-rank 5: rank 5 does not exist among 2 (ranks are 0 to 1)");
  CHECK_THROWS_WITH(check_ddp_flags(0, 3, 3, DdpRuns::kYes), StartsWith("--fault-rank 3: rank 3 does not exist among 3"));
  CHECK_THROWS_WITH(check_ddp_flags(4, 2, -1, DdpRuns::kYes), "--nproc 4 needs one GPU per rank, but --gpus is 2");
  CHECK_THROWS_WITH(check_ddp_flags(0, 0, 1, DdpRuns::kNo), StartsWith("--nproc and --fault-rank are for ddp"));
  CHECK_THROWS_WITH(check_ddp_flags(2, 0, -1, DdpRuns::kNo), StartsWith("--nproc and --fault-rank are for ddp"));
  CHECK_THROWS_AS(require_rank_exists(1, 1), UsageError);
  CHECK_NOTHROW(require_rank_exists(0, 1));
}

TEST_CASE("bench: --one-gpu-sweep reads chapter 05's sweep JSON, its rows under `sweep`") {
  const std::string path = temp_path("one_gpu_sweep.json");
  const std::vector<std::string> args = {WORKBOOK_BENCH_PROGRAM, "exchange", "--quick", "--one-gpu-sweep", path};
  std::ofstream(path) << R"({"program": "fused_kernels_bench", "device": "GPU", "sweep": []})";
  check_one_line(args, 77, ContainsSubstring(" needs a CUDA GPU: "), Stdout::kAny, without_gpus());  // accepted
  std::ofstream(path) << R"({"program": "fused_kernels_bench", "rows": []})";  // not 05's sweep as it is now
  check_usage_error(args, "not the JSON of `fused_kernels_bench --sweep` (chapter 05)", Stdout::kEmpty, without_gpus());
  std::remove(path.c_str());
}

TEST_CASE("bench: more ranks than GPUs is exit 77 with the reason") {
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "ddp", "--quick", "--nproc", "64"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 77);
}

TEST_CASE("bench ddp --json: stdout is one JSON object (the ranks' reports go to stderr)", "[gpu]") {
  const ProgramResult r = run_program({WORKBOOK_BENCH_PROGRAM, "ddp", "--quick", "--gpus", "1", "--json"});
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);  // throws (fails) on anything else in stdout
  CHECK(j["passed"] == true);
  require_training_passed(j["ddp"]["rank0"], 1);
  CHECK_THAT(r.err, ContainsSubstring("rank 0 of 1"));
}

TEST_CASE("bench exchange: every way's sums exact on 2 GPUs, every epoch checked", "[multigpu]") {
  require_gpus(2);
  const nlohmann::json j = run_json(WORKBOOK_BENCH_PROGRAM, {"exchange", "--quick", "--gpus", "2", "--gpu-counts", "2"});
  CHECK(j["passed"] == true);
  // Six ways in one process (nccl, nccl_symmetric, one_shot launched, graphed and in one kernel,
  // an empty kernel), then three with one process per GPU, each a CUDA graph: one_shot (mailboxes
  // over CUDA IPC), nccl and nccl_symmetric (NCCL_GRAPH_MIXING_SUPPORT=0).
  REQUIRE(j["exchange"]["alone"].size() == 9);
  CHECK(j["exchange"]["alone"][4]["launch"] == "one_kernel");
  CHECK(j["exchange"]["alone"][5]["exchange"] == "none");
  for (int k = 6; k < 9; ++k) {
    CHECK(j["exchange"]["alone"][k]["form"] == "ddp");
    CHECK(j["exchange"]["alone"][k]["launch"] == "graph");
  }
  CHECK(j["exchange"]["alone"][6]["exchange"] == "one_shot");
  CHECK(j["exchange"]["alone"][7]["exchange"] == "nccl");
  CHECK(j["exchange"]["alone"][8]["exchange"] == "nccl_symmetric");
  for (const auto& row : j["exchange"]["alone"]) {
    CAPTURE(row.dump());
    CHECK(row["correct"] == true);
    CHECK(row["time_us"]["median"].get<double>() > 0.0);
    require_timing(row["time_us"], j["exchange"]["batches"].get<int>());
  }
  REQUIRE(j["exchange"]["epochs"].size() == 7);  // 3 exchanges x dp, ddp at one size, then on_chip
  CHECK(j["exchange"]["epochs"][6]["mode"] == "on_chip");
  CHECK(j["exchange"]["epochs"][6]["gpus"] == 2);
  for (const auto& row : j["exchange"]["epochs"]) CHECK(row["passed"] == true);
}

TEST_CASE("bench scaling on 1 and 2 GPUs: each exchange in turn, every run checked, efficiency against its own 1 GPU",
          "[multigpu]") {
  require_gpus(2);
  const nlohmann::json j = run_json(WORKBOOK_BENCH_PROGRAM, {"scaling", "--quick", "--gpu-counts", "1,2", "--weak", "100K"});
  CHECK(j["passed"] == true);
  CHECK(j["scaling"]["exchanges"] == nlohmann::json{"nccl", "nccl_symmetric", "one_shot"});
  // 3 exchanges x (strong 200K, weak 100K) x (1, 2 GPUs), in that order
  const auto& rows = j["scaling"]["rows"];
  REQUIRE(rows.size() == 12);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    CAPTURE(row.dump());
    CHECK(row["exchange"] == j["scaling"]["exchanges"][i / 4]);
    CHECK(row["passed"] == true);
    CHECK(row["gpus"] == (i % 2 == 0 ? 1 : 2));
    CHECK(row["points_per_gpu"] == (row["kind"] == "strong" ? 200'000 / row["gpus"].get<int>() : 100'000));
    if (i % 2 == 1) {  // 2 GPUs: the efficiency is the same exchange's 1-GPU epoch over this one's
      const double t1 = rows[i - 1]["us_per_epoch"], t2 = row["us_per_epoch"];
      CHECK(row["efficiency"].get<double>() == (row["kind"] == "strong" ? t1 / (2 * t2) : t1 / t2));
    }
  }
}

TEST_CASE("all-reduce: every element of every rank exact, 2 GPUs and more", "[multigpu]") {
  require_gpus(2);
  const nlohmann::json j = run_json(WORKBOOK_BENCH_PROGRAM, {"allreduce", "--quick"});
  CHECK(j["allreduce"]["wrong"] == 0);
  for (const auto& row : j["allreduce"]["rows"]) {
    CHECK(row["wrong"] == 0);
    CHECK(row["busbw_gbps"].get<double>() > 0.0);
    require_timing(row["time_us"], j["allreduce"]["batches"].get<int>());
  }
}

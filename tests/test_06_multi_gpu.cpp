// test_06_multi_gpu.cpp: chapter 06's lesson, as its promises. Untagged cases run without a GPU:
// sharding (every point in exactly one shard, remainders), rank-to-GPU mapping, the unique id as
// hex, the multicast-off environment, the learning rate, the on-chip room, and the two lesson
// programs' usage errors. [gpu] cases run one GPU: a replica's sums against their CPU twin, one
// rank giving the single-GPU bits with every exchange, and on chip. [multigpu] cases (2 or 4 GPUs)
// run both programs: DataParallel and DDP equal to one GPU and to the float64 reference, every rank
// bit-identical, DDP ranks started by hand, by the bench's launcher and by mpirun. The one-shot
// exchange's kernels are test_06_one_shot.cpp's; the launcher's promises test_06_launcher.cpp's
// and test_06_signals.cpp's; the bench's test_06_bench.cpp's.
#include "by_hand.h"
#include "bench/exchange_alone.h"  // the one-shot exchange in two halves
#include "bench/training_ways.h"
#include "cuda_check.h"
#include "device_buffer.h"
#include "exit_codes.h"
#include "multi_gpu.h"
#include "nccl_check.h"
#include "one_shot_exchange.h"
#include "regression_problem.h"
#include "stream.h"
#include "support/exchange.h"
#include "support/mpi_bootstrap.h"
#include "support/nccl_comm.h"
#include "support/rank_environment.h"
#include "support/sharding.h"
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

namespace {

// This test process calls NCCL itself in its [gpu] cases (train_data_parallel): multicast off
// before main(), as the programs do first thing in their main().
const bool multicast_off_in_this_process = [] {
  apply_forced_environment();
  return true;
}();

}  // namespace

TEST_CASE("shards: contiguous, every point in exactly one, remainders to the lowest ranks") {
  const std::int64_t total = GENERATE(0, 1, 2, 3, 5, 7, 31, 32, 33, 1'000'003, 4'000'000);
  const int ranks = GENERATE(1, 2, 3, 4, 7, 8);
  const std::int64_t first = GENERATE(0, 4'000'000);
  CAPTURE(total, ranks, first);
  std::int64_t next = first;
  std::int64_t smallest = total, largest = 0;
  for (int r = 0; r < ranks; ++r) {
    const Shard s = shard_of(total, ranks, r, first);
    CHECK(s.start == next);  // contiguous and in rank order: no gap, no overlap
    next = s.start + s.count;
    smallest = std::min(smallest, s.count);
    largest = std::max(largest, s.count);
    if (r > 0) CHECK(s.count <= shard_of(total, ranks, r - 1, first).count);  // extras go to low ranks
  }
  CHECK(next == first + total);  // every point covered
  CHECK(largest - smallest <= 1);
  CHECK_THROWS(shard_of(total, ranks, ranks));
  CHECK_THROWS(shard_of(total, 0, 0));
}

TEST_CASE("shards of the 3-rank case of the 4-GPU test: 200017 points") {
  const regression::Split split = regression::split_of(200'017);
  CHECK(split.train == 160'013);
  CHECK(split.test == 40'004);
  CHECK(shard_of(split.train, 3, 0).count == 53'338);
  CHECK(shard_of(split.train, 3, 1).count == 53'338);
  CHECK(shard_of(split.train, 3, 2).count == 53'337);
  CHECK(shard_of(split.test, 3, 0, split.train).count == 13'335);
  CHECK(shard_of(split.test, 3, 2, split.train).count == 13'334);
}

TEST_CASE("rank to GPU: the node-local rank picks the GPU; too few GPUs is exit 77") {
  CHECK(device_for_local_rank(0, 0, 2) == 0);
  CHECK(device_for_local_rank(1, 0, 2) == 1);
  CHECK(device_for_local_rank(1, 2, 4) == 3);
  CHECK_THROWS_AS(device_for_local_rank(2, 0, 2), NoGpuError);
  CHECK_THROWS_AS(device_for_local_rank(2, 2, 4), NoGpuError);
  fake_env.clear();
  CHECK_FALSE(local_rank_from_environment(&lookup));
  fake_env["SLURM_LOCALID"] = "2";
  CHECK(local_rank_from_environment(&lookup) == 2);
  fake_env["OMPI_COMM_WORLD_LOCAL_RANK"] = "3";  // OpenMPI's variable wins
  CHECK(local_rank_from_environment(&lookup) == 3);
  fake_env["OMPI_COMM_WORLD_LOCAL_RANK"] = "x";
  CHECK_THROWS(local_rank_from_environment(&lookup));
}

TEST_CASE("the NCCL unique id survives hex encoding") {
  ncclUniqueId id;
  for (std::size_t i = 0; i < sizeof id.internal; ++i) id.internal[i] = static_cast<char>(i * 37 + 11);
  const std::string hex = encode_unique_id(id);
  CHECK(hex.size() == 2 * sizeof id.internal);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  const ncclUniqueId back = decode_unique_id(hex);
  CHECK(std::memcmp(back.internal, id.internal, sizeof id.internal) == 0);
  CHECK_THROWS(decode_unique_id(hex.substr(1)));
  CHECK_THROWS(decode_unique_id("zz" + hex.substr(2)));
}

TEST_CASE("multicast off: set in this process, required before NCCL, printed as in effect") {
  REQUIRE(multicast_off_in_this_process);
  CHECK(std::string(std::getenv("NCCL_NVLS_ENABLE")) == "0");
  CHECK_NOTHROW(require_forced_environment());
  CHECK(forced_environment_text() == "NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1");
  for (const auto& [name, value] : forced_environment()) {
    CAPTURE(name);
    REQUIRE(setenv(name.c_str(), "7", 1) == 0);
    CHECK_THROWS_WITH(require_forced_environment(), ContainsSubstring(name));
    REQUIRE(unsetenv(name.c_str()) == 0);
    CHECK_THROWS_WITH(require_forced_environment(), ContainsSubstring(name + " is unset"));
    apply_forced_environment();
    CHECK(std::string(std::getenv(name.c_str())) == value);
  }
  CHECK_NOTHROW(require_forced_environment());
}

TEST_CASE("learning rate: scaled_lr (chapter 05's sweep rule) unless --lr is given") {
  CHECK(effective_lr(std::nullopt, 5'000'000) == 0.01);
  CHECK(effective_lr(std::nullopt, 1'000) == 0.01);
  CHECK(std::fabs(effective_lr(std::nullopt, 100'000'000) - 0.01 / 400.0) < 1e-15);
  CHECK(effective_lr(0.5, 100'000'000) == 0.5);
}

TEST_CASE("on-chip room: blocks x (registers + shared memory), and the line above it") {
  using fused::kOnChipRegisterFloat4;
  using fused::kOnChipThreads;
  // An H100's or H200's shape: 132 SMs, one 512-thread block each, 227 KiB of shared memory.
  const fused::OnChipRoom room = fused::on_chip_room_of(1, 132, 232'416);
  CHECK(room.capacity.blocks == 132);
  CHECK(room.capacity.register_bytes == 132LL * kOnChipThreads * kOnChipRegisterFloat4 * 32);  // 17.3 MB
  CHECK(room.capacity.shared_bytes == 132LL * 232'416);                                      // 30.7 MB
  CHECK(room.capacity.points() == room.capacity.bytes() / 8);
  // A block's registers hold 512 x 8 float4 pairs: 16384 points; beyond that, 32 bytes a pair.
  CHECK(room.shared_bytes_for(132LL * 16'384) == 0);
  CHECK(room.shared_bytes_for(132LL * 16'384 + 4) == 32);  // one float4 more: block 0 takes it
  CHECK(room.fits(room.capacity.points()));
  CHECK_FALSE(room.fits(room.capacity.points() + 4 * 132));
  // 10M points train on 8M: 64 MB, too much for one such GPU, and half of it fits on each of two.
  const std::int64_t train = regression::split_of(10'000'000).train;
  CHECK_FALSE(room.fits(train));
  CHECK(room.fits(shard_of(train, 2, 0).count));
  CHECK(room.does_not_fit(train) == "does not fit on chip: 64.0 MB needed, 48.0 MB available");
  // No cooperative launch, or no block that fits: no room at any size, and the reason instead.
  fused::OnChipRoom none;
  none.unavailable = "needs cooperative launch";
  CHECK_FALSE(none.fits(1));
  CHECK(none.does_not_fit(1) == "needs cooperative launch");
}

TEST_CASE("lesson programs: usage errors are exit 2 with a one-line reason") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--gpus", "-1"}, "--gpus must be at least 1, got -1"},
      {{"--gpus", "0"}, "--gpus must be at least 1, got 0"},
      {{"dp", "--nccl-nonblocking"}, "--nccl-nonblocking is for ddp"},
      {{"ddp", "--gpus", "2"}, "--gpus is for dp"},
      {{"--timeout-s", "0"}, "--timeout-s"},
      {{"--timeout-s", "1e30"}, "--timeout-s must be at most 86400, got 1e+30"},
      {{"dp", "--points", "5X"}, "--points: '5X' is not a size"},
      {{"--device", "cuda:"}, "--device must be N, cuda or cuda:N"},
      {{"--reference-max", "1Q"}, "--reference-max: '1Q' is not a size"},
      {{"dp", "--nproc", "2"}, "--nproc"},
      {{"topology"}, "topology"},
      {{"--repeats", "0"}, "--repeats must be at least 1, got 0"},
      {{"ddp", "--nccl-nonblocking", "--gpus", "1"}, "--gpus is for dp"},
      {{"--seed", "3"}, "--seed seeds --noise: without it it changes nothing"},
  };
  for (const char* program : {WORKBOOK_PROGRAM, WORKBOOK_OTHER_PROGRAM}) {
    for (const auto& [args, message] : cases) {
      check_usage_error(with_args({program}, args), message, Stdout::kEmpty, without_gpus());
    }
  }
  // Each program has one idea: multi_gpu has no exchange to choose and no on-chip training.
  check_usage_error({WORKBOOK_PROGRAM, "--exchange", "one_shot"}, "--exchange", Stdout::kEmpty, without_gpus());
  check_usage_error({WORKBOOK_PROGRAM, "--on-chip"}, "--on-chip", Stdout::kEmpty, without_gpus());
  check_usage_error({WORKBOOK_OTHER_PROGRAM, "--exchange", "nccl"}, "--exchange", Stdout::kEmpty, without_gpus());
  check_usage_error({WORKBOOK_PROGRAM, "ddp"},
                    "ddp runs one process per GPU: start the ranks with `multi_gpu_bench ddp --nproc N` or `mpirun -np N "
                    "multi_gpu ddp`",
                    Stdout::kEmpty, without_gpus());
  check_usage_error({WORKBOOK_OTHER_PROGRAM, "ddp"},
                    "ddp runs one process per GPU: start the ranks with `multi_gpu_bench ddp --nproc N --exchange "
                    "one_shot` or `mpirun -np N by_hand ddp`",
                    Stdout::kEmpty, without_gpus());
  const ProgramResult help = run_program({WORKBOOK_PROGRAM, "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, ContainsSubstring("ddp") && ContainsSubstring("dp"));
  const ProgramResult by_hand_help = run_program({WORKBOOK_OTHER_PROGRAM, "--help"});
  CHECK(by_hand_help.exit_code == 0);
  CHECK_THAT(by_hand_help.out, ContainsSubstring("--on-chip") && ContainsSubstring("ddp"));
}

TEST_CASE("programs: sizes with K, M and G and every device form are accepted; no GPU is exit 77") {
  for (const auto& [program, args] : std::vector<std::pair<const char*, std::vector<std::string>>>{
           {WORKBOOK_PROGRAM, {"dp", "--points", "50K"}}, {WORKBOOK_PROGRAM, {"--device", "cuda:0"}},
           {WORKBOOK_PROGRAM, {"--device", "cuda"}}, {WORKBOOK_PROGRAM, {"--device", "1", "dp"}},
           {WORKBOOK_PROGRAM, {"--reference-max", "1G"}}, {WORKBOOK_OTHER_PROGRAM, {"--on-chip"}},
           {WORKBOOK_OTHER_PROGRAM, {"dp", "--points", "50K"}},
           {WORKBOOK_BENCH_PROGRAM, {"exchange", "--exchange-points", "1M"}},
           {WORKBOOK_BENCH_PROGRAM, {"ddp", "--exchange", "nccl_symmetric"}},
           {WORKBOOK_BENCH_PROGRAM, {"allreduce", "--min-bytes", "4K", "--max-bytes", "1M"}},
           {WORKBOOK_BENCH_PROGRAM, {"topology", "--copy-mib", "1K"}},
           {WORKBOOK_BENCH_PROGRAM, {"scaling", "--strong", "200K,2M", "--weak", "1M"}},
           {WORKBOOK_BENCH_PROGRAM,
            {"ddp", "--nproc", "2", "--fault-rank", "1", "--fault-signal", "stop", "--fault-after-s", "0.5"}}}) {
    check_one_line(with_args({program, "--quick"}, args), 77, ContainsSubstring(" needs a CUDA GPU: "), Stdout::kAny,
                   without_gpus());
  }
}

TEST_CASE("one GPU: the lesson and the whole bench pass", "[gpu]") {
  require_gpus(1);
  // The two variables that NCCL does not read, set "wrong" here: main() must override them (the
  // NCCL one is not set to 1 on purpose, even with one GPU, on a shared machine).
  const std::map<std::string, std::string> wrong{{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "0"}, {"NVSHMEM_DISABLE_NVLS", "0"}};
  ProgramResult r;
  require_training_passed(run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "1"}, &r, wrong), 1);
  CHECK_THAT(r.out, ContainsSubstring("NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"));
  require_training_passed(run_json(WORKBOOK_OTHER_PROGRAM, {"--quick", "--gpus", "1"}, &r, wrong), 1, "by_hand");
  const nlohmann::json j = run_json(WORKBOOK_BENCH_PROGRAM, {"--quick", "--gpus", "1"}, &r, wrong);
  CHECK(j["passed"] == true);
  CHECK(j["environment"] == nlohmann::json{{"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
                                           {"NVSHMEM_DISABLE_NVLS", "1"}});
  CHECK(j["allreduce"]["environment"] == j["environment"]);
  CHECK(j["ddp"]["environment"] == j["environment"]);
  require_training_passed(j["ddp"]["rank0"], 1);
  CHECK(j["ddp"]["us_per_epoch"].get<double>() > 0.0);
  CHECK(j["ddp"]["compute_us"].get<double>() > 0.0);
  CHECK(j["allreduce"]["wrong"] == 0);
}

TEST_CASE("more points or bytes than a GPU holds: one line naming the flag, exit 1, before allocating", "[gpu]") {
  require_gpus(1);
  for (const auto& [program, args] : std::vector<std::pair<const char*, std::vector<std::string>>>{
           {WORKBOOK_PROGRAM, {"dp", "--gpus", "1", "--points", "60000000000"}},
           {WORKBOOK_OTHER_PROGRAM, {"dp", "--gpus", "1", "--points", "60000000000"}},
           {WORKBOOK_BENCH_PROGRAM, {"ddp", "--nproc", "1", "--points", "60G"}},
           {WORKBOOK_BENCH_PROGRAM, {"topology", "--gpus", "1", "--copy-mib", "1000000"}}}) {
    CAPTURE(program, args);  // for the checks after the helper's
    const ProgramResult r = check_one_line(with_args({program}, args), 1,
                                           StartsWith("error: --") && ContainsSubstring(" needs ") &&
                                               ContainsSubstring(" MiB of GPU memory, but only ") &&
                                               ContainsSubstring("are free on device 0"));
    CHECK_THAT(r.err, !ContainsSubstring(".cu:"));  // a reason, not a source location
    CHECK_THAT(r.err, !ContainsSubstring(".cpp:"));
  }
}

TEST_CASE("a device index that does not exist is exit 2 naming the devices that do", "[gpu]") {
  require_gpus(1);
  for (const char* index : {"99", "cuda:99"}) {
    check_one_line({WORKBOOK_PROGRAM, "--quick", "--device", index}, 2,
                   StartsWith("error: --device 99: cudaErrorInvalidDevice: invalid device ordinal; this machine has "));
  }
}

TEST_CASE("one rank of the DataParallel analog gives the single-GPU bits", "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  const regression::Config c = single_gpu_bits_problem();
  const ParallelRun run = train_data_parallel(make_problem(c), {0}, 1);
  std::string why;
  const auto single = single_gpu(c, &why);
  REQUIRE(single);
  // One shard is the whole training set: the same kernel shape, the same order of additions,
  // an all-reduce of one rank that copies, the same step: the same bits.
  CHECK(run.ranks.front().w == static_cast<float>(single->w));
  CHECK(run.ranks.front().b == static_cast<float>(single->b));
  CHECK(check_against_single_gpu(run, *single).ok);
}

TEST_CASE("one GPU: a replica's three sums match their CPU twin on uneven shards", "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  regression::Config c;
  c.points = 200'000;  // 160000 training points: shards of 53334, 53333 and 53333 (float4 tails of 2 and 1)
  c.epochs = 1;
  const Problem p = make_problem(c);
  const regression::Dataset data = regression::make_dataset_cpu(c);
  for (int rank : {0, 2}) {
    CAPTURE(rank);
    const Shard train = shard_of(p.train_points, 3, rank);
    Stream stream;
    Replica replica(p, train, shard_of(p.test_points, 3, rank, p.train_points), stream.get());
    replica.enqueue_sums();
    stream.synchronize();
    float got[3] = {0.0f, 0.0f, 0.0f};
    CUDA_CHECK(cudaMemcpy(got, replica.sums(), sizeof got, cudaMemcpyDeviceToHost));
    const ShardSums want = shard_sums_cpu(data, train, regression::kInitialW, regression::kInitialB);
    // float sums of about 53K terms of one sign (r < 0 for every point at the start) against double:
    // 04's loss tolerance, 1e-4 relative.
    const double expected[3] = {want.rr, want.rx, want.r};
    for (int k = 0; k < 3; ++k) {
      CAPTURE(k, got[k], expected[k]);
      CHECK(std::fabs(got[k] - expected[k]) <= regression::kLossTolerance.rel * std::fabs(expected[k]));
    }
  }
}

TEST_CASE("one GPU: by hand, and NCCL on symmetric windows, give the single-GPU bits (the mailbox is local)", "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  const regression::Config c = single_gpu_bits_problem();
  std::string why;
  const auto single = single_gpu(c, &why);
  REQUIRE(single);
  // One rank: its own slot is the sum (by hand), and an all-reduce of one rank copies: the same
  // step on the same sums, so the same bits as one GPU.
  for (const char* exchange : {"one_shot", "nccl_symmetric"}) {
    CAPTURE(exchange);
    const ParallelRun run = training_way(exchange).train_dp(make_problem(c), {0}, 2, 30.0);
    CAPTURE(run.exchange, run.exchange_note);
    CHECK(run.ranks.front().w == static_cast<float>(single->w));
    CHECK(run.ranks.front().b == static_cast<float>(single->b));
    CHECK(check_against_single_gpu(run, *single).ok);
    CHECK_FALSE(run.exchange_note.empty());  // what ran, or why NCCL declined
    if (std::string(exchange) == "one_shot") CHECK(run.exchange == "one_shot");
    if (std::string(exchange) == "nccl_symmetric") CHECK((run.exchange == "nccl_symmetric" || run.exchange == "nccl"));
  }
  // The program by_hand in one process, and one ddp rank of it through the launcher (its mailbox
  // connected over NCCL to itself alone); nccl_symmetric's rank through the launcher too.
  const nlohmann::json dp = run_json(WORKBOOK_OTHER_PROGRAM, {"--quick", "--gpus", "1"});
  require_training_passed(dp, 1, "by_hand");
  CHECK(dp["exchange"]["used"] == "one_shot");
  for (const char* exchange : {"one_shot", "nccl_symmetric"}) {
    CAPTURE(exchange);
    const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "1", "--exchange", exchange});
    const bool by_hand = std::string(exchange) == "one_shot";
    require_training_passed(ddp["ddp"]["rank0"], 1, by_hand ? "by_hand" : "multi_gpu_bench train-rank");
    if (by_hand) CHECK(ddp["ddp"]["rank0"]["exchange"]["used"] == "one_shot");
    CHECK(dp["ranks"][0]["w"] == ddp["ddp"]["rank0"]["ranks"][0]["w"]);
  }
}

TEST_CASE("on chip, one GPU: the float64 reference, the same bits on a rerun; above the room, one line",
          "[gpu]") {
  require_gpus(1);
  const nlohmann::json a = run_json(WORKBOOK_OTHER_PROGRAM, {"--quick", "--gpus", "1", "--on-chip"});
  require_training_passed(a, 1, "by_hand");  // the float64 reference (04's tolerances), and one GPU
  CHECK(a["exchange"]["on_chip"] == true);
  CHECK(a["exchange"]["used"] == "one_shot");
  const nlohmann::json again = run_json(WORKBOOK_OTHER_PROGRAM, {"--quick", "--gpus", "1", "--on-chip", "--repeats", "3"});
  CHECK(again["ranks"][0]["w"] == a["ranks"][0]["w"]);
  CHECK(again["ranks"][0]["b"] == a["ranks"][0]["b"]);
  // Through the launcher: one rank, its mailbox connected over NCCL to itself alone.
  const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "1", "--on-chip"});
  require_training_passed(ddp["ddp"]["rank0"], 1, "by_hand");
  CHECK(ddp["ddp"]["rank0"]["ranks"][0]["w"] == a["ranks"][0]["w"]);
  // 20M points train on 16M: 128 MB, more than any GPU of today holds on chip.
  check_one_line({WORKBOOK_OTHER_PROGRAM, "--gpus", "1", "--on-chip", "--points", "20M", "--epochs", "1"}, 1,
                 StartsWith("error: GPU 0's shard does not fit on chip: 128.0 MB needed, ") &&
                     ContainsSubstring(" MB available"));
}

TEST_CASE("DataParallel analog on 2 GPUs equals single-GPU; ranks bit-identical", "[multigpu]") {
  require_gpus(2);
  require_training_passed(run_json(WORKBOOK_PROGRAM, {"dp", "--quick", "--gpus", "2"}), 2);
}

TEST_CASE("DDP analog with 2 ranks equals single-GPU; ranks bit-identical", "[multigpu]") {
  require_gpus(2);
  const nlohmann::json j = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "2"});
  require_training_passed(j["ddp"]["rank0"], 2);
  CHECK(j["ddp"]["launcher"]["exits"].size() == 2);
  // The same with non-blocking communicators: slower per call, the same bits.
  const nlohmann::json nb = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "2", "--nccl-nonblocking"});
  require_training_passed(nb["ddp"]["rank0"], 2);
  CHECK(nb["ddp"]["rank0"]["ranks"][0]["w"] == j["ddp"]["rank0"]["ranks"][0]["w"]);
}

TEST_CASE("DDP, 2 ranks of each lesson program started by hand: single-GPU results, ranks bit-identical",
          "[multigpu]") {
  require_gpus(2);
  // No launcher: this test is the one torchrun or a script would be. It makes NCCL's unique id
  // (hosting its bootstrap root) and starts two ranks, each told who it is in its environment.
  for (const auto& [program, name] : {std::pair{WORKBOOK_PROGRAM, "multi_gpu"}, std::pair{WORKBOOK_OTHER_PROGRAM, "by_hand"}}) {
    CAPTURE(name);
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string path = temp_path("by_hand_start.json");
    ProgramResult ranks[2];
    std::vector<std::thread> started;
    for (int rank = 0; rank < 2; ++rank) {
      const Env env{{kRankVariable, std::to_string(rank)}, {kWorldSizeVariable, "2"},
                    {kLocalRankVariable, std::to_string(rank)}, {kNcclIdVariable, encode_unique_id(id)}};
      started.emplace_back([&ranks, rank, env, program = program, path] {
        ranks[rank] = run_program({program, "ddp", "--quick", "--json", path}, env, std::chrono::seconds(150));
      });
    }
    for (std::thread& t : started) t.join();
    CAPTURE(ranks[0].out, ranks[0].err, ranks[1].err);
    REQUIRE(ranks[0].exit_code == 0);
    REQUIRE(ranks[1].exit_code == 0);
    require_training_passed(read_json(path), 2, name);
  }
}

TEST_CASE("by hand and NCCL on symmetric windows, on 2 GPUs: single-GPU results, bit-identical ranks", "[multigpu]") {
  require_gpus(2);
  const nlohmann::json dp_nccl = run_json(WORKBOOK_PROGRAM, {"dp", "--quick", "--gpus", "2"});
  const nlohmann::json dp = run_json(WORKBOOK_OTHER_PROGRAM, {"dp", "--quick", "--gpus", "2"});
  require_training_passed(dp, 2, "by_hand");
  CHECK(dp["exchange"]["used"] == "one_shot");
  // Two ranks: each of the 3 sums is one float addition, a + b, whatever the exchange: the same
  // bits as NCCL's all-reduce.
  CHECK(dp["ranks"][0]["w"] == dp_nccl["ranks"][0]["w"]);
  CHECK(dp["ranks"][0]["b"] == dp_nccl["ranks"][0]["b"]);
  for (const char* exchange : {"one_shot", "nccl_symmetric"}) {
    CAPTURE(exchange);
    const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "2", "--exchange", exchange});
    const bool by_hand = std::string(exchange) == "one_shot";
    require_training_passed(ddp["ddp"]["rank0"], 2, by_hand ? "by_hand" : "multi_gpu_bench train-rank");
    CAPTURE(ddp["ddp"]["rank0"]["exchange"]["note"]);  // if NCCL declined, why
    if (by_hand) CHECK(ddp["ddp"]["rank0"]["exchange"]["used"] == "one_shot");
    CHECK(ddp["ddp"]["rank0"]["ranks"][0]["w"] == dp_nccl["ranks"][0]["w"]);
  }
}

TEST_CASE("on chip, 2 GPUs, one process and one per GPU: the reference, bit-identical ranks and reruns",
          "[multigpu]") {
  require_gpus(2);
  const nlohmann::json dp = run_json(WORKBOOK_OTHER_PROGRAM, {"--quick", "--gpus", "2", "--on-chip"});
  require_training_passed(dp, 2, "by_hand");
  const nlohmann::json again = run_json(WORKBOOK_OTHER_PROGRAM, {"--quick", "--gpus", "2", "--on-chip", "--repeats", "3"});
  CHECK(again["ranks"][1]["w"] == dp["ranks"][1]["w"]);
  CHECK(again["ranks"][1]["b"] == dp["ranks"][1]["b"]);
  const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "2", "--on-chip"});
  require_training_passed(ddp["ddp"]["rank0"], 2, "by_hand");
  CHECK(ddp["ddp"]["rank0"]["ranks"][0]["w"] == dp["ranks"][0]["w"]);  // the same kernel, the same bits
  CHECK(ddp["ddp"]["rank0"]["exchange"]["on_chip"] == true);
}

TEST_CASE("DP and DDP on 4 GPUs equal single-GPU; ranks bit-identical", "[multigpu]") {
  require_gpus(4);
  require_training_passed(run_json(WORKBOOK_PROGRAM, {"dp", "--quick", "--gpus", "4"}), 4);
  require_training_passed(run_json(WORKBOOK_OTHER_PROGRAM, {"dp", "--quick", "--gpus", "4"}), 4, "by_hand");
  require_training_passed(run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "4"})["ddp"]["rank0"], 4);
  require_training_passed(
      run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "4", "--exchange", "one_shot"})["ddp"]["rank0"], 4,
      "by_hand");
  // 3 ranks: shards of unequal size (200017 points: 160013 train = 53338 + 53338 + 53337; 40004
  // test = 13335 + 13335 + 13334; checked in the sharding case).
  require_training_passed(
      run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "3", "--points", "200017"})["ddp"]["rank0"], 3);
}

TEST_CASE("mpirun -np 2: each lesson program's DDP analog equals single-GPU; ranks bit-identical", "[multigpu]") {
  require_gpus(2);
  if (!mpi_built_in()) SKIP("this build has no MPI (install libopenmpi-dev and reconfigure)");
  const ProgramResult version = run_program({"mpirun", "--version"});
  if (version.exit_code != 0) SKIP("mpirun is not on PATH");
  // The flags below are Open MPI's; another MPI's mpirun takes others.
  if ((version.out + version.err).find("Open MPI") == std::string::npos) SKIP("mpirun is not Open MPI's");
  const std::string path = temp_path("mpirun.json");
  // --allow-run-as-root: OpenMPI refuses root without it (containers); --bind-to none: the ranks
  // are not pinned to one core each. The program turns NVLink multicast off itself; -x says so
  // to every rank's environment as well.
  for (const auto& [program, name] : {std::pair{WORKBOOK_PROGRAM, "multi_gpu"}, std::pair{WORKBOOK_OTHER_PROGRAM, "by_hand"}}) {
    const ProgramResult r = run_program({"mpirun", "--allow-run-as-root", "--bind-to", "none", "-x",
                                         "NCCL_NVLS_ENABLE=0", "-np", "2", program, "ddp", "--quick", "--json", path});
    CAPTURE(name, r.out, r.err);
    REQUIRE(r.exit_code == 0);
    require_training_passed(read_json(path), 2, name);
  }
}

TEST_CASE("pytorch_data_parallel.py: nn.DataParallel trains to the plain model's w and b", "[pytorch]") {
  require_torch_cuda(WORKBOOK_PYTHON);
  const std::string out = temp_path("pytorch_data_parallel.json");
  const ProgramResult r = run_program({WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_data_parallel.py",
                                       "--quick", "--json", out});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = read_json(out);
  CHECK(j["passed"] == true);
  REQUIRE(j["runs"].size() == 2);
  CHECK(j["program"] == "pytorch_data_parallel");
  CHECK(j["runs"][1]["gpus"].get<int>() == j["gpus"].get<int>());
  for (const auto& run : j["runs"]) require_timing(run["training_ms"], j["repeats"].get<int>());
  for (const char* stage : {"scatter", "replicate", "parallel_apply", "gather"}) {
    CHECK(j["stages_us"][stage]["median"].get<double>() > 0.0);
    require_timing(j["stages_us"][stage], j["repeats"].get<int>());
  }
}

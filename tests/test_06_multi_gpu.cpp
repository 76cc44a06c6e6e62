// test_06_multi_gpu.cpp: chapter 06's checks. Untagged cases run without a GPU: the busbw
// arithmetic, sharding (every point in exactly one shard, remainders), the all-reduce sizes,
// rank-to-GPU mapping, the unique id as hex, the launcher's environment and its handling of a
// failed worker (with /bin/sh standing in for the workers: several failing at once, stragglers,
// the whole-run bound, stdout, inherited descriptors, signals), the multicast-off environment,
// the --exchange names and the line a failed one-shot wait becomes, and the program's usage errors.
// [multigpu] cases (2 or 4 GPUs) run the program: DP and DDP equal to one GPU and to the float64
// reference, every rank bit-identical, with every --exchange; all-reduce wrong elements 0; and a
// rank killed from outside (each --exchange), the others ending within their bound naming it.
// [gpu] cases run one rank, the one-shot kernels included (a local mailbox; two mailboxes as
// two ranks on one GPU; a rank that never publishes; the abort flag).
#include "cuda_check.h"
#include "device_buffer.h"
#include "support/exchange.h"
#include "exit_codes.h"
#include "gpu_support.h"
#include "program_checks.h"
#include "bench/launcher.h"
#include "support/mpi_bootstrap.h"
#include "support/nccl_comm.h"
#include "bench/bench_plan.h"
#include "regression_problem.h"
#include "multi_gpu.h"
#include "one_shot_exchange.h"
#include "support/rank_environment.h"
#include "support/sharding.h"
#include "bench/stop_signals.h"
#include "stream.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using namespace workbook;
using namespace workbook::multi_gpu;
using namespace workbook::testing;

namespace {

// This test process calls NCCL itself in its [gpu] cases (train_data_parallel): multicast off
// before main(), as the program does first thing in its main().
const bool multicast_off_in_this_process = [] {
  apply_forced_environment();
  return true;
}();

std::string file_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A fake environment for the functions that take an EnvLookup.
std::map<std::string, std::string> fake_env;
const char* lookup(const char* name) {
  const auto it = fake_env.find(name);
  return it == fake_env.end() ? nullptr : it->second.c_str();
}

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `program` (the lesson or the bench) with `args` and --json; its JSON, after exit 0.
nlohmann::json run_json(const char* program, std::vector<std::string> args, ProgramResult* result = nullptr,
                        const std::map<std::string, std::string>& env = {}) {
  const std::string path = temp_path("multi_gpu.json");
  args.insert(args.begin(), program);
  args.insert(args.end(), {"--json", path});
  const ProgramResult r = run_program(args, env);
  skip_if_no_gpu(r);
  if (result != nullptr) *result = r;
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  return read_json(path);
}

// The problem of the one-GPU cases that compare with single_gpu bit for bit: 300001 points, 30 epochs.
regression::Config single_gpu_bits_problem() {
  regression::Config c;
  c.points = 300'001;
  c.epochs = 30;
  return c;
}

// A measured time as every JSON of the workbook holds it (table.h's timing()): {median, min, max, runs}.
void require_timing(const nlohmann::json& t, int runs) {
  CAPTURE(t.dump());
  REQUIRE(t.is_object());
  CHECK(t.size() == 4);
  CHECK(t["runs"].get<int>() == runs);
  CHECK(t["min"].get<double>() <= t["median"].get<double>());
  CHECK(t["median"].get<double>() <= t["max"].get<double>());
}

// The lesson's report of a run (dp, or rank 0 of ddp): the common top level (program, gpus, the
// settings), passed (bit-identical ranks, the float64 reference, one GPU), one row per rank, every
// rank with rank 0's w and b and its timed runs.
void require_training_passed(const nlohmann::json& j, int ranks) {
  CAPTURE(j.dump(2));
  CHECK(j["program"] == "multi_gpu");
  CHECK(j["gpus"] == ranks);
  CHECK(j["passed"] == true);
  REQUIRE(j["ranks"].size() == static_cast<std::size_t>(ranks));
  for (const auto& r : j["ranks"]) {
    CHECK(r["w"] == j["ranks"][0]["w"]);
    CHECK(r["b"] == j["ranks"][0]["b"]);
    require_timing(r["training_ms"], j["repeats"].get<int>());
  }
}

}  // namespace

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

TEST_CASE("launcher: a worker's identity from its environment") {
  fake_env.clear();
  CHECK_FALSE(worker_identity_from_environment(&lookup));  // not a worker
  fake_env = {{kRankVariable, "1"}, {kWorldSizeVariable, "4"}, {kNcclIdVariable, "00ff"}, {kControlFdVariable, "9"}};
  const auto w = worker_identity_from_environment(&lookup);
  REQUIRE(w);
  CHECK(w->rank == 1);
  CHECK(w->world_size == 4);
  CHECK(w->local_rank == 1);  // defaults to the rank (one node)
  CHECK(w->control_fd == 9);
  fake_env[kRankVariable] = "4";
  CHECK_THROWS(worker_identity_from_environment(&lookup));  // rank outside the world
  fake_env[kRankVariable] = "1";
  fake_env.erase(kNcclIdVariable);
  CHECK_THROWS(worker_identity_from_environment(&lookup));
  fake_env[kNcclIdVariable] = "00";
  fake_env[kWorldSizeVariable] = "two";
  CHECK_THROWS(worker_identity_from_environment(&lookup));
}

TEST_CASE("launcher: the worker environment keeps the parent's, replaces ours, forces NVLS off") {
  WorkerIdentity id;
  id.rank = 2;
  id.world_size = 3;
  id.local_rank = 2;
  id.nccl_id_hex = "abcd";
  id.control_fd = 7;
  const std::vector<std::string> parent = {"PATH=/usr/bin", "NCCL_NVLS_ENABLE=1", std::string(kRankVariable) + "=0",
                                           std::string(kControlFdVariable) + "=99", "CUDA_VISIBLE_DEVICES=0,1,2"};
  const std::vector<std::string> env = worker_environment(parent, id);
  auto count = [&](const std::string& entry) { return std::count(env.begin(), env.end(), entry); };
  auto count_name = [&](const std::string& name) {
    return std::count_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
  };
  CHECK(count("PATH=/usr/bin") == 1);
  CHECK(count("CUDA_VISIBLE_DEVICES=0,1,2") == 1);
  CHECK(count("NCCL_NVLS_ENABLE=0") == 1);
  CHECK(count_name("NCCL_NVLS_ENABLE") == 1);
  CHECK(count("TORCH_SYMM_MEM_DISABLE_MULTICAST=1") == 1);
  CHECK(count("NVSHMEM_DISABLE_NVLS=1") == 1);
  CHECK(count(std::string(kRankVariable) + "=2") == 1);
  CHECK(count_name(kRankVariable) == 1);
  CHECK(count(std::string(kControlFdVariable) + "=7") == 1);
  CHECK(count_name(kControlFdVariable) == 1);
  CHECK(count(std::string(kNcclIdVariable) + "=abcd") == 1);
}

TEST_CASE("launcher: the first failed rank is named, the others are told, stragglers are killed") {
  // /bin/sh stands in for the workers: rank 1 fails at once; rank 0 waits for the launcher's
  // message and exits 3 after echoing it; rank 2 ignores it and must be killed after the bound.
  const std::string script =
      "case $WORKBOOK_DDP_RANK in 1) sleep 0.2; exit 5;; "
      "0) head -n1 /dev/fd/$WORKBOOK_DDP_CONTROL_FD >&2; exit 3;; "
      "*) exec sleep 60;; esac";
  std::ostringstream log;
  LaunchResult r;
  const double seconds = seconds_of([&] { r = launch_workers("/bin/sh", {"-c", script}, 3, "00", {1.0, 60.0}, log); });
  CAPTURE(log.str());
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
  CHECK(r.first_failure->status == 5);
  CHECK(describe_exit(*r.first_failure) == "exit status 5");
  CHECK(seconds < 60.0);  // below rank 2's own sleep: it was killed, not waited for, however busy the machine
  REQUIRE(r.exits.size() == 3);
  for (const ChildExit& e : r.exits) {
    if (e.rank == 0) CHECK(e.status == 3);
    if (e.rank == 2) CHECK(e.killed);
  }
  CHECK_THAT(log.str(), ContainsSubstring("rank 1 failed first"));
  CHECK_FALSE(r.ok());
  // All workers well: nothing failed, nothing killed.
  const LaunchResult fine = launch_workers("/bin/sh", {"-c", "exit 0"}, 2, "00", {1.0, 60.0}, log);
  CHECK(fine.ok());
  CHECK(fine.exits.size() == 2);
  CHECK_FALSE(fine.timed_out);
}

TEST_CASE("launcher: a worker's report goes to the launcher's stderr, or to /dev/null for a sweep") {
  // Each /bin/sh worker compares its stdout with the launcher's stderr (or /dev/null), by the file
  // each descriptor is open on, and exits 0 when they match: the launcher's stdout is never used.
  std::ostringstream log;
  const std::string same_as_launcher_stderr = "[ \"$(readlink /proc/$$/fd/1)\" = \"$(readlink /proc/$PPID/fd/2)\" ]";
  const LaunchResult shown = launch_workers("/bin/sh", {"-c", same_as_launcher_stderr}, 2, "00", {1.0, 60.0}, log);
  CAPTURE(log.str());
  CHECK(shown.ok());
  const LaunchResult discarded = launch_workers("/bin/sh", {"-c", "[ \"$(readlink /proc/$$/fd/1)\" = /dev/null ]"}, 2,
                                                "00", {1.0, 60.0}, log, Fault{}, WorkerReports::discarded);
  CHECK(discarded.ok());
  // and the workers' stderr is still the launcher's
  const LaunchResult errors = launch_workers("/bin/sh", {"-c", "[ \"$(readlink /proc/$$/fd/2)\" = \"$(readlink /proc/$PPID/fd/2)\" ]"},
                                             1, "00", {1.0, 60.0}, log, Fault{}, WorkerReports::discarded);
  CHECK(errors.ok());
}

TEST_CASE("launcher: several ranks failing together do not kill it with SIGPIPE") {
  // Every rank exits 1 at once: when the launcher reaps the first, the others have exited but are
  // not reaped yet, so its message goes to pipes with no reader. Without SIGPIPE ignored, that
  // write kills the launcher (and this test binary with it).
  struct sigaction before {};
  REQUIRE(sigaction(SIGPIPE, nullptr, &before) == 0);
  for (int attempt = 0; attempt < 20; ++attempt) {
    CAPTURE(attempt);
    std::ostringstream log;
    const LaunchResult r = launch_workers("/bin/sh", {"-c", "exit 1"}, 4, "00", {5.0, 60.0}, log);
    CAPTURE(log.str());
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank >= 0);
    CHECK(r.first_failure->rank < 4);
    CHECK(describe_exit(*r.first_failure) == "exit status 1");
    CHECK(r.exits.size() == 4);
    for (const ChildExit& e : r.exits) CHECK_FALSE(e.killed);
    CHECK_THAT(log.str(), ContainsSubstring("failed first"));
  }
  struct sigaction after {};
  REQUIRE(sigaction(SIGPIPE, nullptr, &after) == 0);
  CHECK(after.sa_handler == before.sa_handler);  // the launcher's ignore is gone again
}

TEST_CASE("launcher: ranks still running after the whole-run bound are killed and named") {
  std::ostringstream log;
  LaunchResult r;
  const double seconds =
      seconds_of([&] { r = launch_workers("/bin/sh", {"-c", "exec sleep 60"}, 2, "00", {1.0, 0.5}, log); });
  CAPTURE(log.str());
  CHECK(seconds < 60.0);  // below the workers' own sleep: killed at the bound, not waited for
  CHECK(r.timed_out);
  CHECK_FALSE(r.first_failure);  // nothing failed: the bound ended it
  CHECK_FALSE(r.ok());
  CHECK(r.still_running == std::vector<int>{0, 1});
  REQUIRE(r.exits.size() == 2);
  for (const ChildExit& e : r.exits) CHECK(e.killed);
  CHECK_THAT(log.str(), ContainsSubstring("whole-run bound"));
}

TEST_CASE("launcher: a worker's stdout goes to stderr; inherited descriptors stay behind") {
  // A descriptor this process opened without close-on-exec must not reach the workers; their
  // control pipe must.
  int stray[2];
  REQUIRE(pipe(stray) == 0);
  const std::string script = "echo worker-$WORKBOOK_DDP_RANK-says-hello; "
                             "[ -e /proc/$$/fd/" + std::to_string(stray[0]) + " ] && exit 9; "
                             "[ -e /proc/$$/fd/$WORKBOOK_DDP_CONTROL_FD ] || exit 8; exit 0";
  // Send this process's stdout and stderr to files for the launch, then put them back.
  const std::string out_path = temp_path("launcher_stdout.txt"), err_path = temp_path("launcher_stderr.txt");
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
  const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE((saved_out >= 0 && saved_err >= 0 && out_fd >= 0 && err_fd >= 0));
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  std::ostringstream log;
  const LaunchResult r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {1.0, 60.0}, log);
  dup2(saved_out, STDOUT_FILENO);
  dup2(saved_err, STDERR_FILENO);
  for (int fd : {saved_out, saved_err, out_fd, err_fd, stray[0], stray[1]}) close(fd);
  const std::string out = file_text(out_path), err = file_text(err_path);
  std::string exits;
  for (const ChildExit& e : r.exits) exits += "rank " + std::to_string(e.rank) + ": " + describe_exit(e) + "; ";
  CAPTURE(log.str(), out, err, exits);
  CHECK(r.ok());
  CHECK(out.empty());
  CHECK_THAT(err, ContainsSubstring("worker-0-says-hello"));
  CHECK_THAT(err, ContainsSubstring("worker-1-says-hello"));
}

TEST_CASE("launcher: a signal is told apart from an exit status above 128") {
  std::ostringstream log;
  const LaunchResult r = launch_workers("/bin/sh", {"-c", "kill -TERM $$"}, 1, "00", {1.0, 60.0}, log);
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->signaled);
  CHECK(r.first_failure->status == 128 + SIGTERM);
  CHECK_THAT(describe_exit(*r.first_failure), ContainsSubstring("signal 15"));
  const LaunchResult high = launch_workers("/bin/sh", {"-c", "exit 130"}, 1, "00", {1.0, 60.0}, log);
  REQUIRE(high.first_failure);
  CHECK_FALSE(high.first_failure->signaled);
  CHECK(describe_exit(*high.first_failure) == "exit status 130");
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

TEST_CASE("control channel: a message, or the launcher gone") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  ControlChannel channel(fds[0]);
  CHECK_FALSE(channel.poll());
  const std::string message = "rank 3 failed (exit status 1)\n";
  REQUIRE(write(fds[1], message.data(), message.size()) == static_cast<ssize_t>(message.size()));
  CHECK(channel.poll() == "rank 3 failed (exit status 1)");
  close(fds[1]);
  int more[2];
  REQUIRE(pipe(more) == 0);
  ControlChannel orphan(more[0]);
  close(more[1]);
  CHECK_THAT(*orphan.poll(), ContainsSubstring("launcher exited"));
}

TEST_CASE("learning rate: scaled_lr (chapter 05's sweep rule) unless --lr is given") {
  CHECK(effective_lr(std::nullopt, 5'000'000) == 0.01);
  CHECK(effective_lr(std::nullopt, 1'000) == 0.01);
  CHECK(std::fabs(effective_lr(std::nullopt, 100'000'000) - 0.01 / 400.0) < 1e-15);
  CHECK(effective_lr(0.5, 100'000'000) == 0.5);
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

TEST_CASE("exchange: a one-shot wait that gave up is one line naming the rank and the epoch") {
  ExchangeSignals s;
  CHECK_FALSE(exchange_failure(s, 20, 30.0));  // code 0: all is well
  s.code = kExchangeTimedOut;
  s.rank = 1;
  s.sequence = 26;  // exchange 26 = epoch 5 of run 1 (run 0 is the warm-up) with 20 epochs a run
  const auto line = exchange_failure(s, 20, 20.0);
  REQUIRE(line);
  CHECK(*line == "the one-shot exchange gave up after 20 s waiting for rank 1's sums of epoch 5 (run 1): "
                 "rank 1 died or hangs");
  CHECK(line->find('\n') == std::string::npos);
  s.code = kExchangeAborted;
  s.rank = 3;
  s.sequence = 1;
  CHECK(exchange_failure(s, 20, 20.0) ==
        "the one-shot exchange was stopped by the host while waiting for rank 3's sums of epoch 0 (run 0)");
  // Outside training (the bench's exchanges alone) there are no epochs: the exchange is named.
  s.sequence = 7;
  CHECK(exchange_failure(s, 0, 20.0) ==
        "the one-shot exchange was stopped by the host while waiting for rank 3's sums of exchange 7");
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

TEST_CASE("programs: usage errors are exit 2 with a one-line reason") {
  // Each with the line it must print, all before any CUDA call (so the same without a GPU).
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
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> lesson_cases = {
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
      {{"ddp"}, "ddp runs one process per GPU: start the ranks with `multi_gpu_bench ddp --nproc N`"},
      {{"--exchange", "ring"}, "--exchange must be nccl, nccl_symmetric or one_shot, got 'ring'"},
      {{"ddp", "--exchange", "ONE_SHOT"}, "--exchange must be nccl, nccl_symmetric or one_shot"},
      {{"--on-chip", "--exchange", "nccl"}, "--on-chip exchanges the sums by one_shot inside its kernel, not --exchange nccl"},
      {{"--repeats", "0"}, "--repeats must be at least 1, got 0"},
      {{"ddp", "--nccl-nonblocking", "--gpus", "1"}, "--gpus is for dp"},
  };
  for (const auto& [program, cases] : {std::pair{WORKBOOK_PROGRAM, lesson_cases}, std::pair{WORKBOOK_BENCH_PROGRAM, bench_cases}}) {
    for (const auto& [args, message] : cases) {
      check_usage_error(with_args({program}, args), message, Stdout::kEmpty, without_gpus());
    }
  }
  const ProgramResult help = run_program({WORKBOOK_PROGRAM, "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, ContainsSubstring("ddp") && ContainsSubstring("dp"));
  const ProgramResult bench_help = run_program({WORKBOOK_BENCH_PROGRAM, "--help"});
  CHECK(bench_help.exit_code == 0);
  CHECK_THAT(bench_help.out, ContainsSubstring("--fault-rank") && ContainsSubstring("scaling") &&
                                 ContainsSubstring("--exchange-points"));
  CHECK_THAT(help.out, ContainsSubstring("--exchange"));
}

TEST_CASE("programs: sizes with K, M and G and every device form are accepted; no GPU is exit 77") {
  for (const auto& [program, args] : std::vector<std::pair<const char*, std::vector<std::string>>>{
           {WORKBOOK_PROGRAM, {"dp", "--points", "50K"}}, {WORKBOOK_PROGRAM, {"--device", "cuda:0"}},
           {WORKBOOK_PROGRAM, {"--device", "cuda"}}, {WORKBOOK_PROGRAM, {"--device", "1", "dp"}},
           {WORKBOOK_PROGRAM, {"--reference-max", "1G"}}, {WORKBOOK_PROGRAM, {"--exchange", "one_shot"}},
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

TEST_CASE("one GPU: the lesson and the whole bench pass", "[gpu]") {
  require_gpus(1);
  // The two variables that NCCL does not read, set "wrong" here: main() must override them (the
  // NCCL one is not set to 1 on purpose, even with one GPU, on a shared machine).
  const std::map<std::string, std::string> wrong{{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "0"}, {"NVSHMEM_DISABLE_NVLS", "0"}};
  ProgramResult r;
  require_training_passed(run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "1"}, &r, wrong), 1);
  CHECK_THAT(r.out, ContainsSubstring("NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"));
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

TEST_CASE("one GPU: --exchange one_shot and nccl_symmetric give the single-GPU bits (the mailbox is local)", "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  const regression::Config c = single_gpu_bits_problem();
  std::string why;
  const auto single = single_gpu(c, &why);
  REQUIRE(single);
  for (ExchangeKind kind : {ExchangeKind::kOneShot, ExchangeKind::kNcclSymmetric}) {
    CAPTURE(exchange_name(kind));
    const ParallelRun run = train_data_parallel(make_problem(c), {0}, 2, {kind, 30.0});
    CAPTURE(run.exchange, run.exchange_note);
    // One rank: its own slot is the sum (one_shot), and an all-reduce of one rank copies: the same
    // step on the same sums, so the same bits as one GPU.
    CHECK(run.ranks.front().w == static_cast<float>(single->w));
    CHECK(run.ranks.front().b == static_cast<float>(single->b));
    CHECK(check_against_single_gpu(run, *single).ok);
    CHECK_FALSE(run.exchange_note.empty());  // what ran, or why NCCL declined
    if (kind == ExchangeKind::kOneShot) CHECK(run.exchange == "one_shot");
    if (kind == ExchangeKind::kNcclSymmetric) CHECK((run.exchange == "nccl_symmetric" || run.exchange == "nccl"));
  }
  // The programs: dp in one process, and one ddp rank through the launcher (its mailbox connected
  // over NCCL to itself alone).
  for (const char* exchange : {"one_shot", "nccl_symmetric"}) {
    CAPTURE(exchange);
    const nlohmann::json dp = run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "1", "--exchange", exchange});
    require_training_passed(dp, 1);
    const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "1", "--exchange", exchange});
    require_training_passed(ddp["ddp"]["rank0"], 1);
    if (std::string(exchange) == "one_shot") {
      CHECK(dp["exchange"]["used"] == "one_shot");
      CHECK(ddp["ddp"]["rank0"]["exchange"]["used"] == "one_shot");
    }
    CHECK(dp["ranks"][0]["w"] == ddp["ddp"]["rank0"]["ranks"][0]["w"]);
  }
}

TEST_CASE("on chip, one GPU: the float64 reference, the same bits on a rerun; above the room, one line",
          "[gpu]") {
  require_gpus(1);
  const nlohmann::json a = run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "1", "--on-chip"});
  require_training_passed(a, 1);  // the float64 reference (04's tolerances), and one GPU
  CHECK(a["exchange"]["on_chip"] == true);
  CHECK(a["exchange"]["used"] == "one_shot");
  const nlohmann::json again = run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "1", "--on-chip", "--repeats", "3"});
  CHECK(again["ranks"][0]["w"] == a["ranks"][0]["w"]);
  CHECK(again["ranks"][0]["b"] == a["ranks"][0]["b"]);
  // Through the launcher: one rank, its mailbox connected over NCCL to itself alone.
  const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "1", "--on-chip"});
  require_training_passed(ddp["ddp"]["rank0"], 1);
  CHECK(ddp["ddp"]["rank0"]["ranks"][0]["w"] == a["ranks"][0]["w"]);
  // 20M points train on 16M: 128 MB, more than any GPU of today holds on chip.
  check_one_line({WORKBOOK_PROGRAM, "--gpus", "1", "--on-chip", "--points", "20M", "--epochs", "1"}, 1,
                 StartsWith("error: GPU 0's shard does not fit on chip: 128.0 MB needed, ") &&
                     ContainsSubstring(" MB available"));
}

TEST_CASE("one-shot kernels on one GPU: two mailboxes add in rank order; a missing rank is named; abort ends a wait",
          "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  Stream stream;
  const cudaStream_t st = stream.get();
  auto upload = [&](std::vector<float> v) {
    DeviceBuffer<float> d(v.size());
    CUDA_CHECK(cudaMemcpy(d.data(), v.data(), d.bytes(), cudaMemcpyHostToDevice));
    return d;
  };
  auto download = [&](const DeviceBuffer<float>& d) {
    std::vector<float> v(d.size());
    CUDA_CHECK(cudaMemcpy(v.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost));
    return v;
  };
  // Rank 0 of two, alone (rank 1 never publishes): its sums published, its gather waiting for rank 1's.
  auto start_waiting_alone = [&](OneShotMailbox& a, const OneShotMailbox& b, const DeviceBuffer<float>& in,
                                 DeviceBuffer<float>& out) {
    a.connect({a.local(), b.local()});
    launch_one_shot_publish(in.data(), a, st);
    launch_one_shot_gather(in.data(), out.data(), a, st);
  };

  SECTION("one rank: the gathered sums are its own (it publishes to nobody, waits for nobody)") {
    OneShotMailbox box(1, 0, 5.0);
    const DeviceBuffer<float> in = upload({1.5f, -2.0f, 3.25f});
    DeviceBuffer<float> out = upload({0, 0, 0});
    for (int i = 0; i < 3; ++i) {  // both parity sets, and back
      launch_one_shot_publish(in.data(), box, st);
      launch_one_shot_gather(in.data(), out.data(), box, st);
    }
    stream.synchronize();
    CHECK(download(out) == std::vector<float>{1.5f, -2.0f, 3.25f});
    CHECK_FALSE(box.failure(1));
  }
  SECTION("two ranks on one GPU: both get rank 0's sums plus rank 1's, exchange after exchange") {
    OneShotMailbox a(2, 0, 5.0), b(2, 1, 5.0);
    a.connect({a.local(), b.local()});
    b.connect({a.local(), b.local()});
    const DeviceBuffer<float> in0 = upload({1e8f, 2.0f, 3.0f}), in1 = upload({1.0f, 20.0f, 30.0f});
    DeviceBuffer<float> out0 = upload({0, 0, 0}), out1 = upload({0, 0, 0});
    for (int i = 0; i < 5; ++i) {  // one stream: each gather finds both slots already written
      launch_one_shot_publish(in0.data(), a, st);
      launch_one_shot_publish(in1.data(), b, st);
      launch_one_shot_gather(in0.data(), out0.data(), a, st);
      launch_one_shot_gather(in1.data(), out1.data(), b, st);
    }
    stream.synchronize();
    const std::vector<float> want = {1e8f + 1.0f, 22.0f, 33.0f};  // rank 0's + rank 1's, in float
    CHECK(download(out0) == want);
    CHECK(download(out1) == want);
    CHECK_FALSE(a.failure(1));
    CHECK_FALSE(b.failure(1));
  }
  SECTION("rank 1 never publishes: rank 0's wait gives up after its timeout, naming rank 1, and stays given up") {
    OneShotMailbox a(2, 0, 0.2), b(2, 1, 0.2);
    const DeviceBuffer<float> in = upload({1, 2, 3});
    DeviceBuffer<float> out = upload({0, 0, 0});
    start_waiting_alone(a, b, in, out);
    const double seconds = seconds_of([&] { stream.synchronize(); });
    CHECK(seconds < 30.0);  // a liveness bound, not a speed: it ended by itself
    const auto line = a.failure(10);
    REQUIRE(line);
    CHECK_THAT(*line, ContainsSubstring("gave up after 0.2 s waiting for rank 1's sums of epoch 0 (run 0)"));
    launch_one_shot_gather(in.data(), out.data(), a, st);  // sticky: returns at once, the record unchanged
    stream.synchronize();
    CHECK(a.failure(10) == line);
    CHECK(download(out) == std::vector<float>{0, 0, 0});
  }
  SECTION("the host's abort flag ends a wait long before its timeout") {
    OneShotMailbox a(2, 0, 120.0), b(2, 1, 120.0);
    const DeviceBuffer<float> in = upload({1, 2, 3});
    DeviceBuffer<float> out = upload({0, 0, 0});
    start_waiting_alone(a, b, in, out);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(cudaStreamQuery(st) == cudaErrorNotReady);  // still waiting for rank 1
    a.abort();
    const double seconds = seconds_of([&] { stream.synchronize(); });
    CHECK(seconds < 30.0);  // far below the 120 s timeout
    const auto line = a.failure(10);
    REQUIRE(line);
    CHECK_THAT(*line, ContainsSubstring("stopped by the host while waiting for rank 1"));
  }
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

TEST_CASE("DP and DDP with --exchange one_shot and nccl_symmetric on 2 GPUs: single-GPU results, bit-identical ranks",
          "[multigpu]") {
  require_gpus(2);
  const nlohmann::json dp_nccl = run_json(WORKBOOK_PROGRAM, {"dp", "--quick", "--gpus", "2"});
  for (const char* exchange : {"one_shot", "nccl_symmetric"}) {
    CAPTURE(exchange);
    const nlohmann::json dp = run_json(WORKBOOK_PROGRAM, {"dp", "--quick", "--gpus", "2", "--exchange", exchange});
    require_training_passed(dp, 2);
    const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "2", "--exchange", exchange});
    require_training_passed(ddp["ddp"]["rank0"], 2);
    CHECK(ddp["ddp"]["rank0"]["ranks"][0]["w"] == dp["ranks"][0]["w"]);
    if (std::string(exchange) == "one_shot") {
      CHECK(dp["exchange"]["used"] == "one_shot");
      CHECK(ddp["ddp"]["rank0"]["exchange"]["used"] == "one_shot");
    } else {
      CAPTURE(dp["exchange"]["note"], ddp["ddp"]["rank0"]["exchange"]["note"]);  // if NCCL declined, why
    }
    // Two ranks: each of the 3 sums is one float addition, a + b, whatever the exchange: the
    // same bits as NCCL's all-reduce.
    CHECK(dp["ranks"][0]["w"] == dp_nccl["ranks"][0]["w"]);
    CHECK(dp["ranks"][0]["b"] == dp_nccl["ranks"][0]["b"]);
  }
}

TEST_CASE("on chip, 2 GPUs, one process and one per GPU: the reference, bit-identical ranks and reruns",
          "[multigpu]") {
  require_gpus(2);
  const nlohmann::json dp = run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "2", "--on-chip"});
  require_training_passed(dp, 2);
  const nlohmann::json again = run_json(WORKBOOK_PROGRAM, {"--quick", "--gpus", "2", "--on-chip", "--repeats", "3"});
  CHECK(again["ranks"][1]["w"] == dp["ranks"][1]["w"]);
  CHECK(again["ranks"][1]["b"] == dp["ranks"][1]["b"]);
  const nlohmann::json ddp = run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "2", "--on-chip"});
  require_training_passed(ddp["ddp"]["rank0"], 2);
  CHECK(ddp["ddp"]["rank0"]["ranks"][0]["w"] == dp["ranks"][0]["w"]);  // the same kernel, the same bits
  CHECK(ddp["ddp"]["rank0"]["exchange"]["on_chip"] == true);
}

TEST_CASE("bench exchange: every way's sums exact on 2 GPUs, every epoch checked", "[multigpu]") {
  require_gpus(2);
  const nlohmann::json j = run_json(WORKBOOK_BENCH_PROGRAM, {"exchange", "--quick", "--gpus", "2", "--gpu-counts", "2"});
  CHECK(j["passed"] == true);
  // Six ways in one process (nccl, nccl_symmetric, one_shot launched, graphed and in one kernel,
  // an empty kernel), then one_shot with one process per GPU (mailboxes over CUDA IPC).
  REQUIRE(j["exchange"]["alone"].size() == 7);
  CHECK(j["exchange"]["alone"][4]["launch"] == "one_kernel");
  CHECK(j["exchange"]["alone"][5]["exchange"] == "none");
  CHECK(j["exchange"]["alone"][6]["form"] == "ddp");
  CHECK(j["exchange"]["alone"][6]["exchange"] == "one_shot");
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

TEST_CASE("DP and DDP on 4 GPUs equal single-GPU; ranks bit-identical", "[multigpu]") {
  require_gpus(4);
  require_training_passed(run_json(WORKBOOK_PROGRAM, {"dp", "--quick", "--gpus", "4"}), 4);
  require_training_passed(run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "4"})["ddp"]["rank0"], 4);
  // 3 ranks: shards of unequal size (200017 points: 160013 train = 53338 + 53338 + 53337; 40004
  // test = 13335 + 13335 + 13334; checked in the sharding case).
  require_training_passed(
      run_json(WORKBOOK_BENCH_PROGRAM, {"ddp", "--quick", "--nproc", "3", "--points", "200017"})["ddp"]["rank0"], 3);
}

TEST_CASE("mpirun -np 2: the DDP analog equals single-GPU; ranks bit-identical", "[multigpu]") {
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
  const ProgramResult r = run_program({"mpirun", "--allow-run-as-root", "--bind-to", "none", "-x",
                                       "NCCL_NVLS_ENABLE=0", "-np", "2", WORKBOOK_PROGRAM, "ddp", "--quick",
                                       "--json", path});
  CAPTURE(r.out, r.err);
  REQUIRE(r.exit_code == 0);
  require_training_passed(read_json(path), 2);
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

TEST_CASE("a rank killed from outside as it trains: rank 0 stops within the bound, naming it", "[multigpu]") {
  require_gpus(2);
  // one_shot: rank 0's step kernel is waiting on the GPU for rank 1's slot; the launcher's message
  // makes rank 0's host set the abort flag that kernel polls (else its own timeout would end it).
  // nccl_symmetric: NCCL's symmetric kernels before 2.29.7 do not poll its abort flag, so rank 0's
  // kernel may never return; its teardown then ends by the last-resort exit (nccl_comm.h).
  // one_shot --on-chip: rank 0's persistent kernel waits inside an epoch; the abort flag ends it too.
  const std::string exchange = GENERATE(as<std::string>(), "nccl", "nccl_symmetric", "one_shot", "on_chip");
  CAPTURE(exchange);
  const bool on_chip = exchange == "on_chip";
  const double bound = 20.0;
  const std::string path = temp_path("fault.json");
  // A run far longer than the fault's 0.5 s: rank 1 is killed while both ranks train.
  std::vector<std::string> argv = {WORKBOOK_BENCH_PROGRAM, "ddp", "--quick", "--nproc", "2", "--epochs", "10000",
                                   "--repeats", "1000", "--reference-max", "0", "--fault-rank", "1", "--fault-after-s",
                                   "0.5", "--timeout-s", std::to_string(bound), "--exchange",
                                   on_chip ? "one_shot" : exchange, "--json", path};
  if (on_chip) argv.emplace_back("--on-chip");
  const ProgramResult r = run_program(argv);
  CAPTURE(r.out, r.err);
  CHECK(r.exit_code == 1);  // not 124: it ended by itself, within run_program's limit
  CHECK_THAT(r.out + r.err, ContainsSubstring("rank 1 failed (signal " + std::to_string(SIGKILL)));
  CHECK_THAT(r.out, ContainsSubstring("sending signal " + std::to_string(SIGKILL)));  // the launcher's log
  // It landed while rank 0 trained (on chip: inside the one launch of all epochs).
  CHECK_THAT(r.err, ContainsSubstring(on_chip ? "rank 0: stopping in the epochs on chip" : "rank 0: stopping in epoch"));
  const nlohmann::json j = read_json(path);
  CHECK(j["passed"] == false);
  CHECK(j["ddp"]["launcher"]["failed_rank"] == 1);
  // Within the bound, as the launcher itself decides: it kills a rank still running `bound` s
  // after the first failure and marks it killed; no wall clock of this test is compared.
  for (const auto& e : j["ddp"]["launcher"]["exits"]) {
    CHECK(e["status"] != 0);  // survivors exit non-zero too
    CHECK(e["killed"] == false);
  }
}

// ---------------------------------------------------------------------------------------------
// Stop signals and unresponsive ranks. The launcher forwards SIGTERM, SIGINT and SIGHUP to every
// rank, kills those still running after its bound, and returns only when all are reaped; a rank
// that is stopped (SIGSTOP) or silent (no heartbeat) is named instead of the peer that noticed.
// Untagged cases drive launch_workers with /bin/sh stand-ins (this test process is the
// launcher: a worker signals it through $PPID); [multigpu] cases run the real program.

namespace {

bool process_gone(int pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

std::size_t open_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Every rank reaped (no zombie left to this process) and gone.
void require_every_rank_gone(const LaunchResult& r, std::size_t nproc) {
  REQUIRE(r.exits.size() == nproc);
  for (const ChildExit& e : r.exits) {
    CAPTURE(e.rank, e.pid);
    CHECK(process_gone(e.pid));
  }
  const pid_t reaped = waitpid(-1, nullptr, WNOHANG);
  const int error = errno;
  CHECK(reaped == -1);
  CHECK(error == ECHILD);
}

std::string signal_name(int sig) { return sig == SIGTERM ? "TERM" : sig == SIGINT ? "INT" : "HUP"; }

// A worker loop that beats every 50 ms for `beats` beats (the way a rank waiting for a peer does).
std::string beat_loop(int beats) {
  return "i=0; while [ $i -lt " + std::to_string(beats) + " ]; do echo > /dev/fd/$" + kHeartbeatFdVariable +
         "; sleep 0.05; i=$((i+1)); done; ";
}

// A launch with a rank that stopped responding (hung or stopped): `failed` ended first (it gave up
// waiting), and `silent` is the rank named unresponsive, the one to blame.
void require_unresponsive_named(const LaunchResult& r, int failed, int silent) {
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == failed);
  REQUIRE(r.unresponsive);
  CHECK(r.unresponsive->rank == silent);
}

}  // namespace

TEST_CASE("launcher: SIGTERM, SIGINT and SIGHUP reach every rank; it returns once all are gone") {
  const int sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
  // to_launcher: only the launcher gets it (kill, Slurm, timeout); else each rank gets it too, as
  // from a terminal's Ctrl-C to the whole foreground group, and again from the launcher.
  const bool to_launcher = GENERATE(true, false);
  CAPTURE(sig, to_launcher);
  struct sigaction before {};
  REQUIRE(sigaction(sig, nullptr, &before) == 0);
  // An ignored signal stays ignored for the launch (nohup; `cmd &` in a script ignores SIGINT).
  if (before.sa_handler == SIG_IGN) SKIP("signal " << sig << " is ignored in this test's environment");
  const std::size_t descriptors = open_descriptors();
  const std::string sender = to_launcher ? "[ $WORKBOOK_DDP_RANK = 0 ] && kill -" + signal_name(sig) + " $PPID; "
                                         : "kill -" + signal_name(sig) + " $PPID $$; ";
  std::ostringstream log;
  const LaunchResult r =
      launch_workers("/bin/sh", {"-c", sender + "exec sleep 60"}, 3, "00", {30.0, 60.0, 5.0}, log);
  CAPTURE(log.str());
  CHECK(r.stop_signal == sig);
  CHECK_FALSE(r.first_failure);  // a rank ended by the stop is not a failure
  CHECK_FALSE(r.ok());
  require_every_rank_gone(r, 3);
  for (const ChildExit& e : r.exits) {
    CAPTURE(e.rank);
    CHECK(e.signaled);
    CHECK(e.status == 128 + sig);  // the forwarded signal ended `sleep`, which nobody else signalled
    CHECK_FALSE(e.killed);
  }
  CHECK_THAT(log.str(), ContainsSubstring("got signal " + std::to_string(sig)));
  CHECK(open_descriptors() == descriptors);  // pipes and self-pipe closed
  struct sigaction after {};
  REQUIRE(sigaction(sig, nullptr, &after) == 0);
  CHECK(after.sa_handler == before.sa_handler);  // the launcher's handler is gone again
}

TEST_CASE("launcher: ranks that ignore the stop signal are killed after the bound") {
  // Rank 1 signals the launcher once rank 0 has set its trap too (a file says so).
  const std::string ready = temp_path("rank0-ignores");
  const std::string script = "trap '' TERM INT HUP; [ $WORKBOOK_DDP_RANK = 0 ] && touch " + ready +
                             "; if [ $WORKBOOK_DDP_RANK = 1 ]; then while [ ! -e " + ready +
                             " ]; do sleep 0.01; done; kill -TERM $PPID; fi; exec sleep 60";
  std::ostringstream log;
  LaunchResult r;
  const double seconds =
      seconds_of([&] { r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {30.0, 60.0, 0.5}, log); });
  CAPTURE(log.str());
  CHECK(r.stop_signal == SIGTERM);
  CHECK(seconds >= 0.5);   // the launcher waited its bound before killing
  CHECK(seconds < 60.0);   // below the ranks' own sleep: killed at the bound, not waited for
  require_every_rank_gone(r, 2);
  for (const ChildExit& e : r.exits) CHECK(e.killed);
  CHECK_THAT(log.str(), ContainsSubstring("still running 0.5 s after signal 15: killed"));
  std::remove(ready.c_str());
}

TEST_CASE("launcher: a stop signal ignored when the launch began stays ignored (nohup)") {
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  REQUIRE(sigaction(SIGHUP, &ignore, &before) == 0);
  std::ostringstream log;
  const LaunchResult r =
      launch_workers("/bin/sh", {"-c", "kill -HUP $PPID $$; sleep 0.2; exit 0"}, 2, "00", {30.0, 60.0, 5.0}, log);
  struct sigaction after {};
  sigaction(SIGHUP, &before, &after);
  CAPTURE(log.str());
  CHECK(after.sa_handler == SIG_IGN);
  CHECK(r.ok());  // nothing stopped the launch; the ranks ignored it too and exited 0
  CHECK(r.stop_signal == 0);
}

TEST_CASE("launcher: a stopped rank is named and killed within a second, before its peer's wait runs out") {
  // Rank 1 stops itself as it starts; rank 0 beats while it "waits" (1.5 s), then would give up.
  // The launcher names rank 1 within a second of the stop (a liveness bound, not a speed: it acts
  // after 0.2 s), kills it, and tells rank 0, which it kills after the 0.5 s bound.
  const std::string script = "if [ $WORKBOOK_DDP_RANK = 1 ]; then kill -STOP $$; exit 0; fi; " + beat_loop(30) + "exit 1";
  std::ostringstream log;
  const LaunchResult r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {0.5, 60.0, 5.0}, log);
  CAPTURE(log.str());
  require_unresponsive_named(r, 1, 1);
  CHECK(r.first_failure->killed);
  CHECK(r.first_failure->stopped);
  CHECK(r.first_failure->seconds < 1.0);  // since the launch, which is also about when it stopped
  CHECK_THAT(r.unresponsive->how, ContainsSubstring("stopped by signal " + std::to_string(SIGSTOP)));
  CHECK(blamed_rank(r) == 1);
  CHECK(describe_failure(r) == "rank 1 stopped responding (stopped by signal " + std::to_string(SIGSTOP) + " (" +
                                   strsignal(SIGSTOP) + ")); the launcher killed it");
  CHECK_THAT(log.str(), ContainsSubstring("rank 1 is stopped by signal " + std::to_string(SIGSTOP)));
  require_every_rank_gone(r, 2);
}

TEST_CASE("launcher: a rank stopped and continued at once is not a failure") {
  // As after Ctrl-Z and `fg`: rank 0 stops rank 1 and continues it at once, then both beat for
  // 0.6 s and exit 0.
  const std::string pid_file = temp_path("rank1.pid");
  std::remove(pid_file.c_str());
  const std::string script = "if [ $WORKBOOK_DDP_RANK = 1 ]; then echo $$ > " + pid_file + "; " + beat_loop(12) +
                             "exit 0; fi; while [ ! -s " + pid_file + " ]; do sleep 0.01; done; p=$(cat " + pid_file +
                             "); kill -STOP $p; kill -CONT $p; " + beat_loop(12) + "exit 0";
  std::ostringstream log;
  const LaunchResult r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {0.5, 60.0, 5.0}, log);
  CAPTURE(log.str());
  CHECK(r.ok());
  CHECK_FALSE(r.unresponsive);
  require_every_rank_gone(r, 2);
  std::remove(pid_file.c_str());
}

TEST_CASE("launcher: a fault from outside reaches its rank after that rank's first heartbeat") {
  // Rank 1 first beats 0.5 s in, then for 3 s unless signalled; the fault (SIGKILL 0.2 s after
  // that first beat) ends it first. Rank 0 waits until it is told that rank 1 failed (its control
  // pipe), then exits 1.
  const std::string script = "if [ $WORKBOOK_DDP_RANK = 1 ]; then sleep 0.5; " + beat_loop(60) + "exit 0; fi; " +
                             "read line <&$" + std::string(kControlFdVariable) + "; exit 1";
  std::ostringstream log;
  const LaunchResult r =
      launch_workers("/bin/sh", {"-c", script}, 2, "00", {5.0, 60.0, 5.0}, log, Fault{1, SIGKILL, 0.2});
  CAPTURE(log.str());
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == 1);
  CHECK(r.first_failure->signaled);
  CHECK(r.first_failure->status == 128 + SIGKILL);
  CHECK_FALSE(r.first_failure->killed);  // the fault's signal, not the launcher's bound
  CHECK(r.first_failure->seconds >= 0.7);  // not before its first beat (0.5 s) and the fault's 0.2 s
  CHECK(r.fault_sent);
  CHECK(describe_failure(r) == "rank 1 failed (signal 9 (Killed))");
  CHECK_THAT(log.str(), ContainsSubstring("sending signal 9 (Killed) to rank 1, the fault asked for"));
  require_every_rank_gone(r, 2);
}

TEST_CASE("launcher: a fault for a rank that ends first, or never beats, is not sent, and says so") {
  std::ostringstream log;
  // Rank 1 beats once and exits 0 at once; rank 0 never beats. Faults 5 s after the first beat.
  const std::string script = "if [ $WORKBOOK_DDP_RANK = 1 ]; then " + beat_loop(1) + "fi; exit 0";
  for (int rank : {0, 1}) {
    CAPTURE(rank);
    const LaunchResult r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {5.0, 60.0, 5.0}, log, Fault{rank, SIGKILL, 5.0});
    CHECK(r.ok());
    CHECK_FALSE(r.fault_sent);
    require_every_rank_gone(r, 2);
  }
}

TEST_CASE("launcher: a running rank without heartbeats is named, one failing on its own is not") {
  SECTION("rank 1 beats once, then hangs; rank 0 beats for 1.5 s, then gives up") {
    const std::string script = "if [ $WORKBOOK_DDP_RANK = 1 ]; then " + beat_loop(1) + "exec sleep 60; fi; " +
                               beat_loop(30) + "exit 1";
    std::ostringstream log;
    const LaunchResult r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {0.5, 60.0, 5.0}, log);
    CAPTURE(log.str());
    require_unresponsive_named(r, 0, 1);
    CHECK_THAT(r.unresponsive->how, ContainsSubstring("no heartbeat for"));
    CHECK_THAT(r.unresponsive->how, ContainsSubstring("before rank 0's last"));
    CHECK_THAT(describe_failure(r), Catch::Matchers::StartsWith("rank 1 stopped responding (no heartbeat"));
    require_every_rank_gone(r, 2);
  }
  SECTION("every rank beats; rank 1 fails by itself and is the one named") {
    const std::string script = "if [ $WORKBOOK_DDP_RANK = 1 ]; then " + beat_loop(10) + "exit 5; fi; " +
                               beat_loop(200) + "exit 0";
    std::ostringstream log;
    const LaunchResult r = launch_workers("/bin/sh", {"-c", script}, 2, "00", {0.5, 60.0, 5.0}, log);
    CAPTURE(log.str());
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
    CHECK_FALSE(r.unresponsive);
    CHECK(describe_failure(r) == "rank 1 failed (exit status 5)");
    require_every_rank_gone(r, 2);
  }
}

TEST_CASE("heartbeat: at most one byte per 100 ms, never blocking; its descriptor reaches the worker") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  {
    ControlChannel channel(-1, fds[1]);  // takes the write end (and closes it)
    for (int i = 0; i < 1000; ++i) channel.heartbeat();
    char bytes[16];
    REQUIRE(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
    CHECK(read(fds[0], bytes, sizeof bytes) == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
    channel.heartbeat();
    CHECK(read(fds[0], bytes, sizeof bytes) == 1);
    // A full pipe (a launcher that does not read) must not block the rank.
    const std::string chunk(4096, '.');
    while (write(fds[1], chunk.data(), chunk.size()) > 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
    CHECK(seconds_of([&] { channel.heartbeat(); }) < 1.0);  // a blocking write would hang, not be slow
  }
  close(fds[0]);
  fake_env = {{kRankVariable, "0"}, {kWorldSizeVariable, "2"}, {kNcclIdVariable, "00"}, {kHeartbeatFdVariable, "11"}};
  const auto w = worker_identity_from_environment(&lookup);
  REQUIRE(w);
  CHECK(w->heartbeat_fd == 11);
  WorkerIdentity id;
  id.nccl_id_hex = "00";
  id.heartbeat_fd = 5;
  const std::vector<std::string> env = worker_environment({std::string(kHeartbeatFdVariable) + "=99"}, id);
  CHECK(std::count(env.begin(), env.end(), std::string(kHeartbeatFdVariable) + "=5") == 1);
  CHECK(std::count(env.begin(), env.end(), std::string(kHeartbeatFdVariable) + "=99") == 0);
}

TEST_CASE("end_by_signal: the parent sees the signal itself (a shell says 128 + signal)") {
  const int sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
  CAPTURE(sig);
  std::cout.flush();  // nothing buffered for the child to write twice
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) end_by_signal(sig);  // never returns
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == sig);
}

namespace {

// The processes whose parent is `parent` (from /proc), with the value of one environment variable.
std::map<int, std::string> children_of(int parent, const std::string& variable) {
  std::map<int, std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream stat(file_text(entry.path() / "stat"));
    std::string pid, comm, state;
    int ppid = 0;
    std::getline(stat, pid, ' ');
    std::getline(stat, comm, ')');  // the command name may hold spaces; it ends at the last ')'
    if (!(stat >> state >> ppid) || ppid != parent) continue;
    std::string value;
    std::ifstream environ_file(entry.path() / "environ");
    for (std::string item; std::getline(environ_file, item, '\0');) {
      if (item.rfind(variable + "=", 0) == 0) value = item.substr(variable.size() + 1);
    }
    found[std::stoi(name)] = value;
  }
  return found;
}

// `multi_gpu_bench ddp --nproc 2` with a long run on a thread; the test finds the launcher (a child of
// this process) and its two ranks (by WORKBOOK_DDP_RANK) to signal them. The destructor kills
// what is left and joins, so a failed REQUIRE cannot leave the run behind.
struct BackgroundDdp {
  std::thread thread;
  ProgramResult result;
  int launcher = -1;
  std::map<int, int> rank_pids;  // rank -> pid

  explicit BackgroundDdp(std::vector<std::string> args) {
    args.insert(args.begin(), {WORKBOOK_BENCH_PROGRAM, "ddp", "--nproc", "2", "--quick", "--epochs", "10000", "--repeats",
                               "1000", "--reference-max", "0"});
    thread = std::thread([this, args] { result = run_program(args, {}, std::chrono::seconds(150)); });
  }
  ~BackgroundDdp() {
    if (launcher > 0 && thread.joinable()) kill(-launcher, SIGKILL);  // run_program gave it a group
    if (thread.joinable()) thread.join();
  }
  // Waits (60 s at most) until the launcher has started both ranks; false if the run ended first.
  bool wait_for_ranks() {
    const std::string program = std::filesystem::canonical(WORKBOOK_BENCH_PROGRAM).string();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const auto& [pid, unused] : children_of(getpid(), kRankVariable)) {
        std::error_code ignored;
        if (std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ignored) == program) launcher = pid;
      }
      if (launcher > 0) {
        rank_pids.clear();
        for (const auto& [pid, rank] : children_of(launcher, kRankVariable)) {
          if (!rank.empty()) rank_pids[std::stoi(rank)] = pid;
        }
        if (rank_pids.size() == 2) return true;
      }
      if (launcher > 0 && process_gone(launcher)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  ProgramResult finish() {
    thread.join();
    return result;
  }
};

}  // namespace

TEST_CASE("ddp --nproc 2: a stop signal reaches both ranks; the program ends as that signal once both are gone",
          "[multigpu]") {
  require_gpus(2);
  const int sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
  const bool to_group = GENERATE(false, true);  // true: the whole group, as a terminal's Ctrl-C does
  CAPTURE(sig, to_group);
  BackgroundDdp run({"--timeout-s", "20"});
  REQUIRE(run.wait_for_ranks());
  std::this_thread::sleep_for(std::chrono::seconds(3));  // into NCCL's init or training
  REQUIRE(kill(to_group ? -run.launcher : run.launcher, sig) == 0);
  ProgramResult r;
  const double seconds = seconds_of([&] { r = run.finish(); });
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err, seconds);
  CHECK(r.exit_code == 128 + sig);
  CHECK(seconds < 30.0);  // a liveness bound, not a speed: the launcher's 10 s, with room for a busy machine
  CHECK_THAT(last_line(r.out), ContainsSubstring("FAIL: ddp: stopped by signal " + std::to_string(sig)));
  CHECK_THAT(r.out, ContainsSubstring("got signal " + std::to_string(sig)));
  for (const auto& [rank, pid] : run.rank_pids) {
    CAPTURE(rank, pid);
    CHECK(process_gone(pid));  // the launcher reaped it before it ended
  }
}

TEST_CASE("ddp --nproc 2: a rank stopped with SIGSTOP is the one the last line names", "[multigpu]") {
  require_gpus(2);
  const std::string path = temp_path("stopped.json");
  // The launcher sees the stop through waitpid, names rank 1 and kills it within a second, and
  // tells rank 0, which stops waiting for it (long before its --timeout-s of 20 s).
  BackgroundDdp run({"--timeout-s", "20", "--launch-timeout-s", "60", "--json", path});
  REQUIRE(run.wait_for_ranks());
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const int stopped = run.rank_pids.at(1);
  REQUIRE(kill(stopped, SIGSTOP) == 0);
  const double gone_after_s = seconds_of([&] {
    for (int i = 0; i < 1000 && !process_gone(stopped); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  const ProgramResult r = run.finish();
  CHECK(gone_after_s < 1.0);  // a liveness bound: the launcher acts 0.2 s after it sees the stop
  skip_if_no_gpu(r);
  CAPTURE(r.out, r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(last_line(r.out), ContainsSubstring("rank 1 stopped responding (stopped by signal " +
                                                 std::to_string(SIGSTOP)));
  const nlohmann::json j = read_json(path);
  CHECK(j["ddp"]["launcher"]["unresponsive_rank"] == 1);
  for (const auto& [rank, pid] : run.rank_pids) {
    CAPTURE(rank, pid);
    CHECK(process_gone(pid));
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

// test_06_launcher.cpp: the launcher of `multi_gpu_bench ddp --nproc N` (bench/launcher.h), what
// torchrun's agent does for one node. Untagged cases drive launch_workers with /bin/sh standing in
// for the workers: a worker's identity and environment, the first failed rank named and the others
// told, stragglers and the whole-run bound, stdout and inherited descriptors, SIGPIPE, the control
// channel. The [multigpu] case runs the real ranks: a rank killed as it trains. Signals, stops,
// faults and heartbeats: test_06_signals.cpp.
#include "bench/launcher.h"
#include "bench/stop_signals.h"
#include "exit_codes.h"
#include "support/rank_environment.h"
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

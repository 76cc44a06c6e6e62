// test_06_signals.cpp: what the launcher of `multi_gpu_bench ddp --nproc N` (bench/launcher.h) does
// with signals and silence: SIGTERM, SIGINT and SIGHUP forwarded to every rank, ranks that ignore
// them killed after the bound, a stopped or silent rank named, the faults injected from outside, the
// heartbeat, and a program that ends as the signal that stopped it. Untagged cases drive
// launch_workers with /bin/sh standing in for the workers; [multigpu] cases run the real ranks.
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

// launcher.h: the single-node launcher of `multi_gpu_bench ddp --nproc N`, what torchrun does for
// one node: start N copies of the lesson's `multi_gpu ddp`, one rank each, hand them the NCCL unique id
// (hex, in an environment variable), watch them, and when one fails tell the others, wait a
// bounded time for them to stop, and kill the stragglers. SIGTERM, SIGINT and SIGHUP sent to the
// launcher are forwarded to every rank; the launcher returns only after every rank is gone.
//
//   apply_forced_environment();   // first thing in main(): multicast off in this process
//   LaunchResult r = launch_workers(lesson_program, worker_args, 4, id_hex, {30.0, 300.0}, std::cerr);
//   if (r.first_failure) ...   // which rank failed first, and how
//   if (r.timed_out) ...       // nothing failed, but r.still_running outlived the whole-run bound
//   if (r.stop_signal) ...     // stopped by SIGTERM, SIGINT or SIGHUP; end_by_signal() after the report
//
// A worker finds its rank with worker_identity_from_environment() and listens on its
// ControlChannel (a pipe from the launcher) while it waits for the GPU; the same object sends
// the launcher a heartbeat from those waits, so a rank that stops responding can be named
// (rank_environment.h: the worker's side).
#pragma once

#include "support/rank_environment.h"

#include <chrono>
#include <csignal>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace workbook::multi_gpu {

// The worker's environment: `parent` ("NAME=value" entries) minus any earlier worker variables,
// plus the identity and forced_environment(), each exactly once.
std::vector<std::string> worker_environment(const std::vector<std::string>& parent, const WorkerIdentity& identity);

// This process's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

// /proc/self/exe: this program's path (the lesson program is its neighbour).
std::string self_path();

struct ChildExit {
  int rank = 0;
  int pid = -1;
  int status = 0;           // the exit status; when `signaled`, 128 + the signal number (as a shell says)
  bool signaled = false;    // ended by a signal (then status - 128 is the signal)
  bool killed = false;      // killed by the launcher: after a bound, or because it was stopped
  bool stopped = false;     // killed because it was stopped by a signal (SIGSTOP, SIGTSTP)
  double seconds = 0.0;     // since the launch
};

struct LaunchBounds {
  double after_failure_s = 30.0;  // after the first failure, how long the other ranks have to stop
  double whole_run_s = 300.0;     // the whole launch, failure or not; then every rank left is killed
  // After a stop signal, how long the ranks have to exit. They keep the default action of these
  // signals, so they end at once but for the teardown of their CUDA context (about a second);
  // 10 s is well inside the 30 s a scheduler such as Slurm waits before its own SIGKILL.
  double after_signal_s = 10.0;
};

// A rank that stopped responding: stopped by a signal (SIGSTOP, SIGTSTP), or running without a
// heartbeat for a while before the rank it was compared with. A rank seen stopped for 0.2 s is
// killed and is the launch's first failure, named at once, rather than when a peer's wait for it
// runs out (--timeout-s).
struct Unresponsive {
  int rank = 0;
  std::string how;  // "stopped by signal 19 (Stopped (signal))", "no heartbeat for 12.3 s before rank 0's last"
};

struct LaunchResult {
  std::vector<ChildExit> exits;            // in the order the launcher saw them
  std::optional<ChildExit> first_failure;  // the first child to exit non-zero (or be killed)
  bool timed_out = false;                  // the whole-run bound passed; the ranks left were killed
  std::vector<int> still_running;          // those ranks, when timed_out
  // When a rank failed first or the whole-run bound passed while another rank had already
  // stopped responding, that rank: the first failure was then most likely a peer that noticed.
  std::optional<Unresponsive> unresponsive;
  int stop_signal = 0;  // the first of SIGTERM, SIGINT, SIGHUP the launcher got (then forwarded), 0: none
  bool fault_sent = false;  // the Fault's signal went to its rank (false: none asked, or the rank ended first)
  bool ok() const { return !first_failure && !timed_out && stop_signal == 0; }
};

// "exit status 1", "signal 9 (Killed)", "killed by the launcher after the bound", "stopped, then
// killed by the launcher".
std::string describe_exit(const ChildExit& e);

// The rank to blame for a failed launch, and how: "rank 1 failed (exit status 1)", "rank 1 stopped
// responding (stopped by signal 19 (Stopped (signal))); the launcher killed it", or "rank 1 stopped
// responding (no heartbeat for 6.0 s before rank 0's last); rank 0 failed first (exit status 1)".
// Requires r.first_failure.
int blamed_rank(const LaunchResult& r);
std::string describe_failure(const LaunchResult& r);

// Starts `nproc` copies of `program` with `args` (argv[1..]), rank r with the identity of rank r
// of nproc, each with its stdout sent to the launcher's stderr (the launcher's stdout stays its
// own: a report, or one JSON object), or discarded (`reports`). Waits for all. After the first failure, writes "rank R
// failed: <how>" to every other worker's control pipe, waits at most `bounds.after_failure_s`
// more, then SIGKILLs those still running. Whatever happens, every rank still running
// `bounds.whole_run_s` after the launch is killed and the result is timed_out. SIGPIPE is ignored
// while the launcher watches (a rank that already exited has closed its pipe) and restored after.
// SIGTERM, SIGINT and SIGHUP (each one not ignored when the launch began) are caught while it
// watches: each is forwarded to every rank still running; after the first, ranks still running
// `bounds.after_signal_s` later are killed, and the result's stop_signal says which it was.
// It returns only when every rank has been reaped. One launch at a time per process (the signal
// handlers are the process's). Progress lines go to `log`.
// `fault`, when its rank is set, is a crash from outside: the launcher sends that rank `signal`
// (SIGKILL: it dies; SIGSTOP: it hangs) `after_s` seconds after its first heartbeat. A rank beats
// from its waits only, the first time once its communicator is up, so a run long enough to train
// past that point is signalled as it trains. The rank's code knows nothing of it, as with a real
// crash. A rank that has ended by then, or that never beats, is not signalled (fault_sent false).
struct Fault {
  int rank = -1;
  int signal = SIGKILL;
  double after_s = 1.0;
};
// Where each worker's report (its stdout) goes: to the launcher's stderr, or nowhere, for a sweep
// that reads the ranks' JSON and prints one row per launch. A worker's errors (its stderr) always show.
enum class WorkerReports { to_stderr, discarded };
LaunchResult launch_workers(const std::string& program, const std::vector<std::string>& args, int nproc,
                            const std::string& nccl_id_hex, LaunchBounds bounds, std::ostream& log, Fault fault = {},
                            WorkerReports reports = WorkerReports::to_stderr);

}  // namespace workbook::multi_gpu

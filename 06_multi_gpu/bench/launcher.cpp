// launcher.cpp: fork/exec of the workers, their environment, supervision and the control pipes.
// The stop signals it forwards are caught by StopSignals (stop_signals.cpp).
//
// launch_workers is four steps over one Launch: spawn every rank, then until every rank is gone
// (reaped) poll their heartbeats, forward the stop signals, reap their state changes and apply
// the bounds; each step is a method below of at most a screen.
#include "launcher.h"

#include "child_process.h"
#include "format.h"
#include "stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace workbook::multi_gpu {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// ---- Liveness ------------------------------------------------------------------------------------
// What the launcher knows of a running rank besides its exit: whether waitpid(WUNTRACED) reported
// it stopped (SIGSTOP, SIGTSTP; WCONTINUED clears it), and when its last heartbeat came. A rank
// beats from its wait loops, also while it waits for a peer, so when a rank gives up waiting the
// one to name is a peer that is stopped, or that fell silent well before the waiting rank's last
// beat: its progress stopped first. A rank that never beat counts as silent since the launch.
constexpr double kSilentMargin_s = 1.0;  // 10 heartbeat periods
// A rank seen stopped for this long is a failure: named, killed, its peers told. Long enough that
// a Ctrl-Z of the whole group followed by `fg` (which continues every rank at once) never trips
// it; short enough that the run ends within a second of the stop, not at a peer's timeout.
constexpr double kStoppedGrace_s = 0.2;

struct Liveness {
  bool stopped = false;
  int stop_signal = 0;
  double stopped_at_s = 0.0;           // since the launch, while stopped
  std::optional<double> first_beat_s;  // since the launch
  std::optional<double> last_beat_s;
};

std::string stopped_how(int stop_signal) {
  return "stopped by signal " + std::to_string(stop_signal) + " (" + strsignal(stop_signal) + ")";
}

// The rank among `candidates` (running, other than the one compared with) that stopped
// responding first, compared with a heartbeat at `reference_beat_s` (none: stopped ranks only),
// which `reference` names ("rank 0's last").
std::optional<Unresponsive> find_unresponsive(const std::vector<std::pair<int, Liveness>>& candidates,
                                              std::optional<double> reference_beat_s, const std::string& reference) {
  std::optional<Unresponsive> found;
  double found_quiet_s = 0.0;
  bool found_stopped = false;
  for (const auto& [rank, l] : candidates) {
    const double quiet_s = l.last_beat_s.value_or(0.0);
    const bool silent = reference_beat_s && *reference_beat_s - quiet_s > kSilentMargin_s;
    if (!l.stopped && !silent) continue;
    // A stopped rank is certain, a silent one inferred: stopped ones first, then the quiet longest.
    if (found && (found_stopped > l.stopped || (found_stopped == l.stopped && found_quiet_s <= quiet_s))) continue;
    const std::string how = l.stopped ? stopped_how(l.stop_signal)
                                      : format("no heartbeat for %.1f s before ", *reference_beat_s - quiet_s) + reference;
    found = Unresponsive{rank, how};
    found_quiet_s = quiet_s;
    found_stopped = l.stopped;
  }
  return found;
}

// ---- One launch ----------------------------------------------------------------------------------
struct Child {
  pid_t pid = -1;
  int control = -1;    // the launcher's (write) end of the worker's control pipe
  int heartbeat = -1;  // the launcher's (read) end of the worker's heartbeat pipe; -1 once closed
  bool running = false;
  Liveness liveness;
};

// What every rank's process is started with.
struct Command {
  const std::string& program;
  const std::vector<std::string>& args;
  const std::string& nccl_id_hex;
  int report_fd;  // where the ranks' stdout goes
};

class Launch {
 public:
  Launch(int nproc, LaunchBounds bounds, std::ostream& log, Fault fault)
      : children_(static_cast<std::size_t>(nproc)), bounds_(bounds), log_(log), fault_(fault) {}
  ~Launch() {
    for (Child& c : children_) {
      if (c.control >= 0) close(c.control);
      if (c.heartbeat >= 0) close(c.heartbeat);
    }
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  void spawn_all(const Command& command);
  void watch();
  LaunchResult finish();

 private:
  int nproc() const { return static_cast<int>(children_.size()); }
  Child& child(int rank) { return children_[static_cast<std::size_t>(rank)]; }
  void spawn(int rank, const Command& command);
  void kill_and_reap_all_on_error() noexcept;
  void wait_for_news();
  void read_heartbeats();
  void send_fault();
  void forward_stop_signals();
  void reap();
  void fail_stopped_ranks();
  void first_failure(const ChildExit& e, std::optional<Unresponsive> unresponsive);
  bool bound_passed();
  ChildExit record_exit(int rank, ChildExit e);
  ChildExit kill_and_reap(int rank, bool stopped = false);
  std::vector<int> kill_remaining();
  std::vector<std::pair<int, Liveness>> others(int except) const;

  std::vector<Child> children_;
  LaunchBounds bounds_;
  std::ostream& log_;
  Fault fault_;
  const Clock::time_point start_ = Clock::now();
  const StopSignals stop_signals_;  // before the forks: see StopSignals
  LaunchResult result_;
  int running_ = 0;
  std::optional<Clock::time_point> failure_deadline_, signal_deadline_;
  double signal_at_s_ = 0.0;
};

// Starts every rank, or none: on an error the ranks already started are killed and reaped, and
// every descriptor made so far is closed, before the error goes on.
void Launch::spawn_all(const Command& command) {
  try {
    for (int rank = 0; rank < nproc(); ++rank) spawn(rank, command);
  } catch (...) {
    kill_and_reap_all_on_error();
    throw;
  }
  running_ = nproc();
  stop_signals_.unblock();
  log_ << "launcher: started " << nproc() << (nproc() == 1 ? " rank" : " ranks") << " (pids";
  for (const Child& c : children_) log_ << " " << c.pid;
  log_ << "); bound for the whole run " << bounds_.whole_run_s << " s\n" << std::flush;
}

// Rank `rank`: its two pipes (the heartbeat's non-blocking at both ends: the rank never waits to
// beat, the launcher never waits to read), its environment, fork and execve.
void Launch::spawn(int rank, const Command& command) {
  int control[2] = {-1, -1}, beat[2] = {-1, -1};
  if (pipe2(control, O_CLOEXEC) != 0 || pipe2(beat, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    close_pair(control);
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(error));
  }
  WorkerIdentity id;
  id.rank = rank;
  id.world_size = nproc();
  id.local_rank = rank;
  id.nccl_id_hex = command.nccl_id_hex;
  id.control_fd = control[0];
  id.heartbeat_fd = beat[1];
  // Everything the child needs is built before fork(): after it, the child only calls
  // async-signal-safe functions (prctl, getppid, sigaction, sigprocmask, dup2, close_range/fcntl,
  // execve, _exit).
  std::vector<std::string> env = worker_environment(current_environment(), id);
  std::vector<std::string> argv_strings{command.program};
  argv_strings.insert(argv_strings.end(), command.args.begin(), command.args.end());
  std::vector<char*> argv, envp;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  for (std::string& s : env) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t launcher = getpid();
  const int max_fd = open_file_limit();

  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close_pair(control);
    close_pair(beat);
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a worker never outlives its launcher
    if (getppid() != launcher) _exit(127);
    stop_signals_.reset_in_child();
    // The worker's report goes to stderr (the launcher's stdout carries only the launcher's own
    // report, or its one JSON object with --json), or to /dev/null.
    if (dup2(command.report_fd, STDOUT_FILENO) < 0) _exit(127);
    close_inherited_on_exec(max_fd);
    fcntl(control[0], F_SETFD, 0);  // of the inherited descriptors, only its two pipe ends survive execve
    fcntl(beat[1], F_SETFD, 0);
    execve(command.program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(control[0]);
  close(beat[1]);
  child(rank) = Child{pid, control[1], beat[0], true, {}};
}

void Launch::kill_and_reap_all_on_error() noexcept {
  for (Child& c : children_) {
    if (!c.running) continue;
    kill(c.pid, SIGKILL);
    while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    c.running = false;
  }
}

// Until every rank is reaped: one pass of the steps, then the bounds.
void Launch::watch() {
  const IgnoreSigpipe ignore_sigpipe;  // after the forks: see IgnoreSigpipe
  while (running_ > 0) {
    wait_for_news();
    read_heartbeats();
    send_fault();
    forward_stop_signals();
    reap();
    fail_stopped_ranks();
    if (running_ == 0 || bound_passed()) break;
  }
}

// Sleeps until a heartbeat or a signal arrives, 5 ms at most (exits are polled with waitpid).
void Launch::wait_for_news() {
  std::vector<pollfd> fds{pollfd{stop_signals_.wake_fd(), POLLIN, 0}};
  for (const Child& c : children_) {
    if (c.heartbeat >= 0) fds.push_back(pollfd{c.heartbeat, POLLIN, 0});
  }
  (void)::poll(fds.data(), fds.size(), 5);  // EINTR: a signal, handled by the steps after
}

void Launch::read_heartbeats() {
  for (Child& c : children_) {
    if (c.heartbeat < 0) continue;
    char beats[64];
    ssize_t got = 0;
    while ((got = read(c.heartbeat, beats, sizeof beats)) > 0) {
      c.liveness.last_beat_s = seconds_since(start_);
      if (!c.liveness.first_beat_s) c.liveness.first_beat_s = c.liveness.last_beat_s;
    }
    if (got == 0) {  // the rank closed its end (it exited): stop polling it
      close(c.heartbeat);
      c.heartbeat = -1;
    }
  }
}

// The fault asked for, if it is time: a signal from outside, as a crash or a hang arrives.
void Launch::send_fault() {
  if (fault_.rank < 0 || fault_.rank >= nproc() || result_.first_failure || stop_signals_.first() != 0) return;
  const Child& victim = child(fault_.rank);
  if (!victim.running || !victim.liveness.first_beat_s) return;
  if (seconds_since(start_) < *victim.liveness.first_beat_s + fault_.after_s) return;
  log_ << "launcher: sending signal " << fault_.signal << " (" << strsignal(fault_.signal) << ") to rank " << fault_.rank
       << ", the fault asked for\n" << std::flush;
  result_.fault_sent = kill(victim.pid, fault_.signal) == 0;
  fault_.rank = -1;  // once
}

// Each stop signal goes to every rank still running (SIGCONT as well, so a stopped rank acts on
// it); the first one starts the bound.
void Launch::forward_stop_signals() {
  for (int sig : stop_signals_.take()) {
    if (!signal_deadline_) {
      result_.stop_signal = sig;
      signal_at_s_ = seconds_since(start_);
      signal_deadline_ = after(Clock::now(), bounds_.after_signal_s);
      log_ << "launcher: got signal " << sig << " (" << strsignal(sig) << "); forwarding it to every rank, which have "
           << bounds_.after_signal_s << " s to exit\n" << std::flush;
    }
    for (const Child& c : children_) {
      if (!c.running) continue;
      kill(c.pid, sig);
      if (c.liveness.stopped) kill(c.pid, SIGCONT);
    }
  }
}

// Every state change of every rank: exits, stops, continues. The first rank to exit non-zero
// (unless a stop signal is ending the launch) is the first failure.
void Launch::reap() {
  std::optional<ChildExit> failed_now;
  for (int rank = 0; rank < nproc(); ++rank) {
    Child& c = child(rank);
    int wait_status = 0;
    pid_t pid = 0;
    while (c.running && (pid = waitpid(c.pid, &wait_status, WNOHANG | WUNTRACED | WCONTINUED)) == c.pid) {
      if (WIFSTOPPED(wait_status)) {
        if (!c.liveness.stopped) c.liveness.stopped_at_s = seconds_since(start_);
        c.liveness.stopped = true;
        c.liveness.stop_signal = WSTOPSIG(wait_status);
      } else if (WIFCONTINUED(wait_status)) {
        c.liveness.stopped = false;
      } else {
        const ChildExit e = record_exit(rank, decode_exit(rank, wait_status, seconds_since(start_)));
        if (e.status != 0 && !failed_now) failed_now = e;
      }
    }
    if (pid < 0 && errno == ECHILD && c.running) {  // reaped elsewhere (should not happen): gone
      ChildExit e;
      e.rank = rank;
      e.status = 1;
      e.seconds = seconds_since(start_);
      record_exit(rank, e);
    }
  }
  // A rank that exits after a stop signal is stopping, not failing (read after waitpid: a signal
  // to the whole group is pending here before any rank it ends can be reaped).
  if (failed_now && !result_.first_failure && stop_signals_.first() == 0) {
    const Child& failed = child(failed_now->rank);
    first_failure(*failed_now, find_unresponsive(others(failed_now->rank), failed.liveness.last_beat_s,
                                                 "rank " + std::to_string(failed_now->rank) + "'s last"));
  }
}

// A rank stopped (SIGSTOP, SIGTSTP) for kStoppedGrace_s would hold its peers until their timeout:
// it is named at once, killed, and the others told, as for a rank that failed.
void Launch::fail_stopped_ranks() {
  if (result_.first_failure || stop_signals_.first() != 0) return;
  for (int rank = 0; rank < nproc(); ++rank) {
    const Liveness l = child(rank).liveness;
    if (!child(rank).running || !l.stopped || seconds_since(start_) - l.stopped_at_s < kStoppedGrace_s) continue;
    log_ << "launcher: rank " << rank << " is " << stopped_how(l.stop_signal) << ": killing it\n";
    first_failure(kill_and_reap(rank, /*stopped=*/true), Unresponsive{rank, stopped_how(l.stop_signal)});
    return;
  }
}

void Launch::first_failure(const ChildExit& e, std::optional<Unresponsive> unresponsive) {
  result_.first_failure = e;
  result_.unresponsive = std::move(unresponsive);
  log_ << "launcher: rank " << e.rank << " failed first (" << describe_exit(e) << " after " << e.seconds << " s)";
  if (result_.unresponsive && result_.unresponsive->rank != e.rank) {
    log_ << ", but rank " << result_.unresponsive->rank << " had stopped responding (" << result_.unresponsive->how << ")";
  }
  log_ << "; telling the other ranks, which have " << bounds_.after_failure_s << " s to stop\n" << std::flush;
  const std::string message = "rank " + std::to_string(e.rank) + " failed (" + describe_exit(e) + ")\n";
  for (Child& other : children_) {
    if (other.running) (void)tell(other.control, message);  // false: it exited too, not yet reaped
  }
  failure_deadline_ = after(Clock::now(), bounds_.after_failure_s);
}

// true when a bound passed: the ranks still running were killed.
bool Launch::bound_passed() {
  const Clock::time_point now = Clock::now();
  if (signal_deadline_ && now > *signal_deadline_) {
    for (int rank : kill_remaining()) {
      log_ << "launcher: rank " << rank << " still running " << bounds_.after_signal_s << " s after signal "
           << result_.stop_signal << ": killed\n";
    }
    return true;
  }
  if (failure_deadline_ && now > *failure_deadline_) {
    for (int rank : kill_remaining()) {
      log_ << "launcher: rank " << rank << " still running " << bounds_.after_failure_s << " s after rank "
           << result_.first_failure->rank << " failed: killed\n";
    }
    return true;
  }
  if (now <= after(start_, bounds_.whole_run_s)) return false;
  // Before the kill: which rank went quiet well before the most recent heartbeat of any.
  std::optional<double> latest_beat;
  for (const Child& c : children_) {
    if (c.liveness.last_beat_s) latest_beat = std::max(latest_beat.value_or(0.0), *c.liveness.last_beat_s);
  }
  result_.unresponsive = find_unresponsive(others(-1), latest_beat, "the latest of any rank");
  result_.still_running = kill_remaining();
  result_.timed_out = true;
  log_ << "launcher: the whole-run bound of " << bounds_.whole_run_s << " s passed; killed the ranks still running:";
  for (int rank : result_.still_running) log_ << " " << rank;
  if (result_.unresponsive) log_ << " (rank " << result_.unresponsive->rank << " " << result_.unresponsive->how << ")";
  log_ << "\n" << std::flush;
  return true;
}

ChildExit Launch::record_exit(int rank, ChildExit e) {
  Child& c = child(rank);
  c.running = false;
  --running_;
  e.pid = c.pid;
  result_.exits.push_back(e);
  return e;
}

// SIGKILL ends a stopped rank too.
ChildExit Launch::kill_and_reap(int rank, bool stopped) {
  const Child& c = child(rank);
  kill(c.pid, SIGKILL);
  int ignored = 0;
  while (waitpid(c.pid, &ignored, 0) < 0 && errno == EINTR) {
  }
  ChildExit e;
  e.rank = rank;
  e.status = 128 + SIGKILL;
  e.signaled = true;
  e.killed = true;
  e.stopped = stopped;
  e.seconds = seconds_since(start_);
  return record_exit(rank, e);
}

std::vector<int> Launch::kill_remaining() {
  std::vector<int> killed;
  for (int rank = 0; rank < nproc(); ++rank) {
    if (!child(rank).running) continue;
    kill_and_reap(rank);
    killed.push_back(rank);
  }
  return killed;
}

// The running ranks other than `except`, with what is known of their liveness.
std::vector<std::pair<int, Liveness>> Launch::others(int except) const {
  std::vector<std::pair<int, Liveness>> list;
  for (int rank = 0; rank < nproc(); ++rank) {
    const Child& c = children_[static_cast<std::size_t>(rank)];
    if (c.running && rank != except) list.emplace_back(rank, c.liveness);
  }
  return list;
}

// A stop signal that came after the watch's last look (say with the ranks it ended, reaped in the
// same pass) still ends the launch as that signal.
LaunchResult Launch::finish() {
  if (result_.stop_signal == 0) {
    for (int sig : stop_signals_.take()) {
      if (result_.stop_signal == 0) result_.stop_signal = sig;
    }
    if (result_.stop_signal == 0) result_.stop_signal = stop_signals_.first();
    signal_at_s_ = seconds_since(start_);
  }
  if (result_.stop_signal != 0) {
    log_ << "launcher: every rank is gone, " << seconds_since(start_) - signal_at_s_ << " s after signal "
         << result_.stop_signal << "\n" << std::flush;
  }
  return result_;
}

// Where the workers' stdout goes: the launcher's stderr, or /dev/null, opened before the forks so
// that a failure to open it is the launcher's one error line, not every rank's exit 127.
class ReportDestination {
 public:
  explicit ReportDestination(WorkerReports reports) {
    if (reports == WorkerReports::to_stderr) return;
    fd_ = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error(std::string("open /dev/null for the ranks' reports: ") + std::strerror(errno));
  }
  ~ReportDestination() {
    if (fd_ > STDERR_FILENO) close(fd_);
  }
  ReportDestination(const ReportDestination&) = delete;
  ReportDestination& operator=(const ReportDestination&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = STDERR_FILENO;
};

}  // namespace

std::vector<std::string> worker_environment(const std::vector<std::string>& parent, const WorkerIdentity& identity) {
  std::vector<std::pair<std::string, std::string>> ours = forced_environment();
  ours.emplace_back(kRankVariable, std::to_string(identity.rank));
  ours.emplace_back(kWorldSizeVariable, std::to_string(identity.world_size));
  ours.emplace_back(kLocalRankVariable, std::to_string(identity.local_rank));
  ours.emplace_back(kNcclIdVariable, identity.nccl_id_hex);
  if (identity.control_fd >= 0) ours.emplace_back(kControlFdVariable, std::to_string(identity.control_fd));
  if (identity.heartbeat_fd >= 0) ours.emplace_back(kHeartbeatFdVariable, std::to_string(identity.heartbeat_fd));
  std::vector<std::string> env;
  for (const std::string& entry : parent) {
    const std::string name = variable_name(entry);
    // never inherit a pipe number from an outer launcher
    bool replaced = name == kControlFdVariable || name == kHeartbeatFdVariable;
    for (const auto& [ours_name, value] : ours) replaced = replaced || name == ours_name;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [name, value] : ours) env.push_back(name + "=" + value);
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

std::string self_path() {
  std::string path(4096, '\0');
  const ssize_t length = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (length <= 0) throw std::runtime_error(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
  path.resize(static_cast<std::size_t>(length));
  return path;
}

std::string describe_exit(const ChildExit& e) {
  if (e.killed && e.stopped) return "stopped, then killed by the launcher";
  if (e.killed) return "killed by the launcher after the bound";
  if (e.signaled) {
    const int signal = e.status - 128;
    return "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "exit status " + std::to_string(e.status);
}

int blamed_rank(const LaunchResult& r) { return r.unresponsive ? r.unresponsive->rank : r.first_failure.value().rank; }

std::string describe_failure(const LaunchResult& r) {
  const ChildExit& f = r.first_failure.value();
  if (!r.unresponsive) return "rank " + std::to_string(f.rank) + " failed (" + describe_exit(f) + ")";
  const std::string named = "rank " + std::to_string(r.unresponsive->rank) + " stopped responding (" + r.unresponsive->how + ")";
  if (r.unresponsive->rank == f.rank) return named + "; the launcher killed it";
  return named + "; rank " + std::to_string(f.rank) + " failed first (" + describe_exit(f) + ")";
}

LaunchResult launch_workers(const std::string& program, const std::vector<std::string>& args, int nproc,
                            const std::string& nccl_id_hex, LaunchBounds bounds, std::ostream& log, Fault fault,
                            WorkerReports reports) {
  const ReportDestination destination(reports);
  Launch launch(nproc, bounds, log, fault);
  launch.spawn_all(Command{program, args, nccl_id_hex, destination.fd()});
  launch.watch();
  return launch.finish();
}

}  // namespace workbook::multi_gpu

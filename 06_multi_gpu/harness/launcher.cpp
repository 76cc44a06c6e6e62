// launcher.cpp: fork/exec of the workers, their environment, supervision and the control pipes.
// The stop signals it forwards are caught by StopSignals (stop_signals.cpp).
#include "launcher.h"

#include "format.h"
#include "stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <iterator>
#include <sstream>

extern char** environ;

namespace workbook::multi_gpu {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ChildExit decode_exit(int rank, int wait_status, double seconds) {
  ChildExit e;
  e.rank = rank;
  e.seconds = seconds;
  if (WIFEXITED(wait_status)) {
    e.status = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    e.signaled = true;
    e.status = 128 + WTERMSIG(wait_status);
  } else {
    e.status = 1;
  }
  return e;
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

// In the child between fork and execve (async-signal-safe calls only): every descriptor above
// stderr that the launcher had open (other workers' pipes, files, NCCL's sockets of the parent)
// is marked close-on-exec. close_range does it in one call (Linux 5.11+); else one fcntl per
// possible descriptor, up to the limit read before fork().
void close_inherited_on_exec(int max_fd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  for (int fd = 3; fd < max_fd; ++fd) (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, rlim_t{1} << 20));
}

// SIGPIPE ignored for the life of the object, the previous disposition restored after: a write to
// the pipe of a rank that has exited (not yet reaped) then fails with EPIPE instead of killing
// the launcher. Installed after fork(), so no worker inherits the ignore through execve.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    installed_ = sigaction(SIGPIPE, &ignore, &previous_) == 0;
  }
  ~IgnoreSigpipe() {
    if (installed_) sigaction(SIGPIPE, &previous_, nullptr);
  }
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

// Writes all of `message` to a worker's control pipe. false when the worker is already gone
// (EPIPE: its read end closed) or the pipe fails otherwise; the caller goes on either way.
bool tell(int fd, const std::string& message) {
  std::size_t done = 0;
  while (done < message.size()) {
    const ssize_t n = write(fd, message.data() + done, message.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;  // EPIPE: already gone
    }
  }
  return true;
}

// ---- Liveness ------------------------------------------------------------------------------------
// What the launcher knows of a running rank besides its exit: whether waitpid(WUNTRACED) reported
// it stopped (SIGSTOP, SIGTSTP; WCONTINUED clears it), and when its last heartbeat came. A rank
// beats from its wait loops, also while it waits for a peer, so when a rank gives up waiting the
// one to name is a peer that is stopped, or that fell silent well before the waiting rank's last
// beat: its progress stopped first. A rank that never beat counts as silent since the launch.
constexpr double kSilentMargin_s = 1.0;  // 10 heartbeat periods

struct Liveness {
  bool stopped = false;
  int stop_signal = 0;
  std::optional<double> first_beat_s;  // since the launch
  std::optional<double> last_beat_s;
};

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
    std::ostringstream how;
    if (l.stopped) {
      how << "stopped by signal " << l.stop_signal << " (" << strsignal(l.stop_signal) << ")";
    } else {
      how << format("no heartbeat for %.1f s before ", *reference_beat_s - quiet_s) << reference;
    }
    found = Unresponsive{rank, how.str()};
    found_quiet_s = quiet_s;
    found_stopped = l.stopped;
  }
  return found;
}

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
  return "rank " + std::to_string(r.unresponsive->rank) + " stopped responding (" + r.unresponsive->how + "); rank " +
         std::to_string(f.rank) + " failed first (" + describe_exit(f) + ")";
}

LaunchResult launch_workers(const std::string& program, const std::vector<std::string>& args, int nproc,
                            const std::string& nccl_id_hex, LaunchBounds bounds, std::ostream& log, Fault fault,
                            WorkerReports reports) {
  using Clock = std::chrono::steady_clock;
  struct Child {
    pid_t pid = -1;
    int control = -1;    // the launcher's (write) end of the worker's control pipe
    int heartbeat = -1;  // the launcher's (read) end of the worker's heartbeat pipe; -1 once closed
    bool running = false;
    Liveness liveness;
  };
  const auto start = Clock::now();
  auto after = [](Clock::time_point t, double seconds) {
    return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const std::vector<std::string> parent_env = current_environment();
  const pid_t launcher = getpid();
  const int max_fd = open_file_limit();
  std::vector<Child> children(static_cast<std::size_t>(nproc));
  LaunchResult result;
  const StopSignals stop_signals;  // before the forks: see StopSignals
  // Where the workers' stdout goes: the launcher's stderr, or /dev/null, opened here before the
  // forks so that a failure to open it is the launcher's one error line, not every rank's exit 127.
  int report_fd = STDERR_FILENO;
  if (reports == WorkerReports::discarded) {
    report_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (report_fd < 0) throw std::runtime_error(std::string("open /dev/null for the ranks' reports: ") + std::strerror(errno));
  }
  struct CloseAtEnd {
    int fd;
    ~CloseAtEnd() {
      if (fd > STDERR_FILENO) close(fd);
    }
  } const close_report{report_fd};

  // A launch that cannot start every rank starts none: on an error the ranks already started are
  // killed and reaped, and every descriptor made so far is closed, before the error goes on.
  int pipe_fds[2] = {-1, -1}, beat_fds[2] = {-1, -1};  // this rank's, until its Child owns them
  auto close_fds = [](int (&fds)[2]) {
    for (int& fd : fds) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  };
  try {
    for (int rank = 0; rank < nproc; ++rank) {
      // The heartbeat pipe is non-blocking at both ends: the rank never waits to beat, the
      // launcher never waits to read.
      if (pipe2(pipe_fds, O_CLOEXEC) != 0 || pipe2(beat_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
      }
      WorkerIdentity id;
      id.rank = rank;
      id.world_size = nproc;
      id.local_rank = rank;
      id.nccl_id_hex = nccl_id_hex;
      id.control_fd = pipe_fds[0];
      id.heartbeat_fd = beat_fds[1];
      // Everything the child needs is built before fork(): after it, the child only calls
      // async-signal-safe functions (prctl, getppid, sigaction, sigprocmask, dup2, close_range/fcntl,
      // execve, _exit).
      std::vector<std::string> env = worker_environment(parent_env, id);
      std::vector<std::string> argv_strings{program};
      argv_strings.insert(argv_strings.end(), args.begin(), args.end());
      std::vector<char*> argv, envp;
      for (std::string& s : argv_strings) argv.push_back(s.data());
      for (std::string& s : env) envp.push_back(s.data());
      argv.push_back(nullptr);
      envp.push_back(nullptr);

      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // a worker never outlives its launcher
        if (getppid() != launcher) _exit(127);
        stop_signals.reset_in_child();
        // The worker's report goes to stderr (the launcher's stdout carries only the launcher's
        // own report, or its one JSON object with --json), or to /dev/null.
        if (dup2(report_fd, STDOUT_FILENO) < 0) _exit(127);
        close_inherited_on_exec(max_fd);
        fcntl(pipe_fds[0], F_SETFD, 0);  // of the inherited descriptors, only its two pipe ends survive execve
        fcntl(beat_fds[1], F_SETFD, 0);
        execve(program.c_str(), argv.data(), envp.data());
        _exit(127);
      }
      close(pipe_fds[0]);
      close(beat_fds[1]);
      children[static_cast<std::size_t>(rank)] = Child{pid, pipe_fds[1], beat_fds[0], true, {}};
      pipe_fds[0] = pipe_fds[1] = beat_fds[0] = beat_fds[1] = -1;
    }
  } catch (...) {
    close_fds(pipe_fds);
    close_fds(beat_fds);
    for (Child& c : children) {
      if (!c.running) continue;
      kill(c.pid, SIGKILL);
      while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      close(c.control);
      close(c.heartbeat);
    }
    throw;
  }
  stop_signals.unblock();
  const IgnoreSigpipe ignore_sigpipe;  // after the forks: see IgnoreSigpipe
  log << "launcher: started " << nproc << (nproc == 1 ? " rank" : " ranks") << " (pids";
  for (const Child& c : children) log << " " << c.pid;
  log << "); bound for the whole run " << bounds.whole_run_s << " s\n" << std::flush;

  int running = nproc;
  auto record_exit = [&](int rank, ChildExit e) {
    Child& c = children[static_cast<std::size_t>(rank)];
    c.running = false;
    --running;
    e.pid = c.pid;
    result.exits.push_back(e);
    return e;
  };
  // Kills every rank still running and records it; returns their ranks. SIGKILL ends a stopped
  // rank too.
  auto kill_remaining = [&] {
    std::vector<int> killed;
    for (int rank = 0; rank < nproc; ++rank) {
      Child& c = children[static_cast<std::size_t>(rank)];
      if (!c.running) continue;
      kill(c.pid, SIGKILL);
      int ignored = 0;
      while (waitpid(c.pid, &ignored, 0) < 0 && errno == EINTR) {
      }
      ChildExit e;
      e.rank = rank;
      e.status = 128 + SIGKILL;
      e.signaled = true;
      e.killed = true;
      e.seconds = seconds_since(start);
      record_exit(rank, e);
      killed.push_back(rank);
    }
    return killed;
  };
  // The running ranks other than `except`, with what is known of their liveness.
  auto others = [&](int except) {
    std::vector<std::pair<int, Liveness>> list;
    for (int rank = 0; rank < nproc; ++rank) {
      const Child& c = children[static_cast<std::size_t>(rank)];
      if (c.running && rank != except) list.emplace_back(rank, c.liveness);
    }
    return list;
  };

  const Clock::time_point whole_run_deadline = after(start, bounds.whole_run_s);
  std::optional<Clock::time_point> failure_deadline, signal_deadline;
  double signal_at_s = 0.0;
  std::vector<pollfd> fds;
  while (running > 0) {
    // Sleep until a heartbeat or a signal arrives, 5 ms at most (exits are polled with waitpid).
    fds.assign(1, pollfd{stop_signals.wake_fd(), POLLIN, 0});
    for (const Child& c : children) {
      if (c.heartbeat >= 0) fds.push_back(pollfd{c.heartbeat, POLLIN, 0});
    }
    (void)::poll(fds.data(), fds.size(), 5);  // EINTR: a signal, handled below
    for (Child& c : children) {
      if (c.heartbeat < 0) continue;
      char beats[64];
      ssize_t got = 0;
      while ((got = read(c.heartbeat, beats, sizeof beats)) > 0) {
        c.liveness.last_beat_s = seconds_since(start);
        if (!c.liveness.first_beat_s) c.liveness.first_beat_s = c.liveness.last_beat_s;
      }
      if (got == 0) {  // the rank closed its end (it exited): stop polling it
        close(c.heartbeat);
        c.heartbeat = -1;
      }
    }

    // The fault asked for, if it is time: a signal from outside, as a crash or a hang arrives.
    if (fault.rank >= 0 && fault.rank < nproc && !result.first_failure && stop_signals.first() == 0) {
      const Child& victim = children[static_cast<std::size_t>(fault.rank)];
      if (victim.running && victim.liveness.first_beat_s &&
          seconds_since(start) >= *victim.liveness.first_beat_s + fault.after_s) {
        log << "launcher: sending signal " << fault.signal << " (" << strsignal(fault.signal) << ") to rank "
            << fault.rank << ", the fault asked for\n" << std::flush;
        result.fault_sent = kill(victim.pid, fault.signal) == 0;
        fault.rank = -1;  // once
      }
    }

    // Forward each stop signal to every rank still running (SIGCONT as well, so a stopped rank
    // acts on it); the first one starts the bound.
    for (int sig : stop_signals.take()) {
      if (!signal_deadline) {
        result.stop_signal = sig;
        signal_at_s = seconds_since(start);
        signal_deadline = after(Clock::now(), bounds.after_signal_s);
        log << "launcher: got signal " << sig << " (" << strsignal(sig) << "); forwarding it to every rank, which have "
            << bounds.after_signal_s << " s to exit\n" << std::flush;
      }
      for (const Child& c : children) {
        if (!c.running) continue;
        kill(c.pid, sig);
        if (c.liveness.stopped) kill(c.pid, SIGCONT);
      }
    }

    // Every state change of every rank: exits, stops, continues.
    std::optional<ChildExit> failed_now;
    for (int rank = 0; rank < nproc; ++rank) {
      Child& c = children[static_cast<std::size_t>(rank)];
      int wait_status = 0;
      pid_t pid = 0;
      while (c.running && (pid = waitpid(c.pid, &wait_status, WNOHANG | WUNTRACED | WCONTINUED)) == c.pid) {
        if (WIFSTOPPED(wait_status)) {
          c.liveness.stopped = true;
          c.liveness.stop_signal = WSTOPSIG(wait_status);
        } else if (WIFCONTINUED(wait_status)) {
          c.liveness.stopped = false;
        } else {
          const ChildExit e = record_exit(rank, decode_exit(rank, wait_status, seconds_since(start)));
          if (e.status != 0 && !failed_now) failed_now = e;
        }
      }
      if (pid < 0 && errno == ECHILD && c.running) {  // reaped elsewhere (should not happen): gone
        ChildExit e;
        e.rank = rank;
        e.status = 1;
        e.seconds = seconds_since(start);
        record_exit(rank, e);
      }
    }
    // A rank that exits after a stop signal is stopping, not failing (read after waitpid: a
    // signal to the whole group is pending here before any rank it ends can be reaped).
    if (failed_now && !result.first_failure && stop_signals.first() == 0) {
      const ChildExit& e = *failed_now;
      result.first_failure = e;
      const Child& failed = children[static_cast<std::size_t>(e.rank)];
      result.unresponsive = find_unresponsive(others(e.rank), failed.liveness.last_beat_s,
                                              "rank " + std::to_string(e.rank) + "'s last");
      log << "launcher: rank " << e.rank << " failed first (" << describe_exit(e) << " after " << e.seconds << " s)";
      if (result.unresponsive) {
        log << ", but rank " << result.unresponsive->rank << " had stopped responding ("
            << result.unresponsive->how << ")";
      }
      log << "; telling the other ranks, which have " << bounds.after_failure_s << " s to stop\n" << std::flush;
      const std::string message = "rank " + std::to_string(e.rank) + " failed (" + describe_exit(e) + ")\n";
      for (Child& other : children) {
        if (other.running) (void)tell(other.control, message);  // false: it exited too, not yet reaped
      }
      failure_deadline = after(Clock::now(), bounds.after_failure_s);
    }
    if (running == 0) break;

    const Clock::time_point now = Clock::now();
    if (signal_deadline && now > *signal_deadline) {
      for (int rank : kill_remaining()) {
        log << "launcher: rank " << rank << " still running " << bounds.after_signal_s << " s after signal "
            << result.stop_signal << ": killed\n";
      }
      break;
    }
    if (failure_deadline && now > *failure_deadline) {
      for (int rank : kill_remaining()) {
        log << "launcher: rank " << rank << " still running " << bounds.after_failure_s << " s after rank "
            << result.first_failure->rank << " failed: killed\n";
      }
      break;
    }
    if (now > whole_run_deadline) {
      // Before the kill: which rank went quiet well before the most recent heartbeat of any.
      std::optional<double> latest_beat;
      for (const Child& c : children) {
        if (c.liveness.last_beat_s) latest_beat = std::max(latest_beat.value_or(0.0), *c.liveness.last_beat_s);
      }
      result.unresponsive = find_unresponsive(others(-1), latest_beat, "the latest of any rank");
      result.still_running = kill_remaining();
      result.timed_out = true;
      log << "launcher: the whole-run bound of " << bounds.whole_run_s << " s passed; killed the ranks still running:";
      for (int rank : result.still_running) log << " " << rank;
      if (result.unresponsive) log << " (rank " << result.unresponsive->rank << " " << result.unresponsive->how << ")";
      log << "\n" << std::flush;
      break;
    }
  }
  // A stop signal that came after the loop's last look (say with the ranks it ended, reaped in the
  // same pass) still ends the launch as that signal.
  if (result.stop_signal == 0) {
    for (int sig : stop_signals.take()) {
      if (result.stop_signal == 0) result.stop_signal = sig;
    }
    if (result.stop_signal == 0) result.stop_signal = stop_signals.first();
    signal_at_s = seconds_since(start);
  }
  if (result.stop_signal != 0) {
    log << "launcher: every rank is gone, " << seconds_since(start) - signal_at_s << " s after signal "
        << result.stop_signal << "\n" << std::flush;
  }
  for (Child& c : children) {
    close(c.control);
    if (c.heartbeat >= 0) close(c.heartbeat);
  }
  return result;
}

}  // namespace workbook::multi_gpu

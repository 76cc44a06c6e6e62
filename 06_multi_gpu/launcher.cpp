// launcher.cpp: fork/exec of the workers, their environment, supervision and the control pipes.
#include "launcher.h"

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
#include <thread>

extern char** environ;

namespace workbook::multi_gpu {
namespace {

std::optional<int> read_int(EnvLookup getenv_fn, const char* name) {
  const char* value = getenv_fn(name);
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno != 0 || v < INT_MIN || v > INT_MAX) {
    throw std::invalid_argument(std::string(name) + "='" + value + "' is not an integer");
  }
  return static_cast<int>(v);
}

std::string variable_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

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

}  // namespace

std::vector<std::pair<std::string, std::string>> forced_environment() {
  return {{"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
}

void apply_forced_environment() {
  for (const auto& [name, value] : forced_environment()) {
    if (setenv(name.c_str(), value.c_str(), 1) != 0) {
      throw std::runtime_error("setenv " + name + ": " + std::strerror(errno));
    }
  }
}

void require_forced_environment() {
  for (const auto& [name, value] : forced_environment()) {
    const char* now = std::getenv(name.c_str());
    if (now == nullptr || value != now) {
      throw std::runtime_error(name + " is " + (now ? std::string("'") + now + "'" : std::string("unset")) +
                               ", must be " + value +
                               " before any NCCL call (NVLink multicast can take shared GPUs out of service): "
                               "call apply_forced_environment() first thing in main()");
    }
  }
}

std::string forced_environment_text() {
  std::string text;
  for (const auto& [name, value] : forced_environment()) {
    const char* now = std::getenv(name.c_str());
    text += (text.empty() ? "" : " ") + name + "=" + (now ? now : "(unset)");
  }
  return text;
}

std::optional<WorkerIdentity> worker_identity_from_environment(EnvLookup getenv_fn) {
  const std::optional<int> rank = read_int(getenv_fn, kRankVariable);
  if (!rank) return std::nullopt;
  WorkerIdentity w;
  w.rank = *rank;
  const std::optional<int> world = read_int(getenv_fn, kWorldSizeVariable);
  if (!world || *world < 1) throw std::invalid_argument(std::string(kWorldSizeVariable) + " must be set to at least 1");
  w.world_size = *world;
  if (w.rank < 0 || w.rank >= w.world_size) {
    throw std::invalid_argument(std::string(kRankVariable) + "=" + std::to_string(w.rank) + " is not a rank of " +
                                std::to_string(w.world_size));
  }
  w.local_rank = read_int(getenv_fn, kLocalRankVariable).value_or(w.rank);
  if (w.local_rank < 0) throw std::invalid_argument(std::string(kLocalRankVariable) + " must be at least 0");
  const char* id = getenv_fn(kNcclIdVariable);
  if (id == nullptr || *id == '\0') throw std::invalid_argument(std::string(kNcclIdVariable) + " is not set");
  w.nccl_id_hex = id;
  w.control_fd = read_int(getenv_fn, kControlFdVariable).value_or(-1);
  return w;
}

std::vector<std::string> worker_environment(const std::vector<std::string>& parent, const WorkerIdentity& identity) {
  std::vector<std::pair<std::string, std::string>> ours = forced_environment();
  ours.emplace_back(kRankVariable, std::to_string(identity.rank));
  ours.emplace_back(kWorldSizeVariable, std::to_string(identity.world_size));
  ours.emplace_back(kLocalRankVariable, std::to_string(identity.local_rank));
  ours.emplace_back(kNcclIdVariable, identity.nccl_id_hex);
  if (identity.control_fd >= 0) ours.emplace_back(kControlFdVariable, std::to_string(identity.control_fd));
  std::vector<std::string> env;
  for (const std::string& entry : parent) {
    const std::string name = variable_name(entry);
    bool replaced = name == kControlFdVariable;  // never inherit a pipe number from an outer launcher
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

LaunchResult launch_workers(const std::string& program, const std::vector<std::string>& args, int nproc,
                            const std::string& nccl_id_hex, LaunchBounds bounds, std::ostream& log) {
  using Clock = std::chrono::steady_clock;
  struct Child {
    pid_t pid = -1;
    int control = -1;  // the launcher's (write) end of the worker's pipe
    bool running = false;
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

  for (int rank = 0; rank < nproc; ++rank) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    WorkerIdentity id;
    id.rank = rank;
    id.world_size = nproc;
    id.local_rank = rank;
    id.nccl_id_hex = nccl_id_hex;
    id.control_fd = pipe_fds[0];
    // Everything the child needs is built before fork(): after it, the child only calls
    // async-signal-safe functions (prctl, getppid, dup2, close_range/fcntl, execve, _exit).
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
      // The worker's report goes to stderr: the launcher's stdout carries only the launcher's
      // own report (or its one JSON object with --json).
      if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) _exit(127);
      close_inherited_on_exec(max_fd);
      fcntl(pipe_fds[0], F_SETFD, 0);  // of the inherited descriptors, only the read end survives execve
      execve(program.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    close(pipe_fds[0]);
    children[static_cast<std::size_t>(rank)] = Child{pid, pipe_fds[1], true};
  }
  const IgnoreSigpipe ignore_sigpipe;  // after the forks: see IgnoreSigpipe
  log << "launcher: started " << nproc << (nproc == 1 ? " rank" : " ranks") << " (pids";
  for (const Child& c : children) log << " " << c.pid;
  log << "); bound for the whole run " << bounds.whole_run_s << " s\n" << std::flush;

  // Kills every rank still running and records it; returns their ranks.
  auto kill_remaining = [&] {
    std::vector<int> killed;
    for (int rank = 0; rank < nproc; ++rank) {
      Child& c = children[static_cast<std::size_t>(rank)];
      if (!c.running) continue;
      kill(c.pid, SIGKILL);
      int ignored = 0;
      while (waitpid(c.pid, &ignored, 0) < 0 && errno == EINTR) {
      }
      c.running = false;
      ChildExit e;
      e.rank = rank;
      e.status = 128 + SIGKILL;
      e.signaled = true;
      e.killed = true;
      e.seconds = seconds_since(start);
      result.exits.push_back(e);
      killed.push_back(rank);
    }
    return killed;
  };

  const Clock::time_point whole_run_deadline = after(start, bounds.whole_run_s);
  std::optional<Clock::time_point> failure_deadline;
  int running = nproc;
  while (running > 0) {
    int wait_status = 0;
    const pid_t pid = waitpid(-1, &wait_status, WNOHANG);
    if (pid > 0) {
      for (int rank = 0; rank < nproc; ++rank) {
        Child& c = children[static_cast<std::size_t>(rank)];
        if (c.pid != pid || !c.running) continue;
        c.running = false;
        --running;
        const ChildExit e = decode_exit(rank, wait_status, seconds_since(start));
        result.exits.push_back(e);
        if (e.status != 0 && !result.first_failure) {
          result.first_failure = e;
          log << "launcher: rank " << rank << " failed first (" << describe_exit(e) << " after " << e.seconds
              << " s); telling the other ranks, which have " << bounds.after_failure_s << " s to stop\n"
              << std::flush;
          const std::string message = "rank " + std::to_string(rank) + " failed (" + describe_exit(e) + ")\n";
          for (Child& other : children) {
            if (other.running) (void)tell(other.control, message);  // false: it exited too, not yet reaped
          }
          failure_deadline = after(Clock::now(), bounds.after_failure_s);
        }
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;  // ECHILD: nothing left to wait for
    const Clock::time_point now = Clock::now();
    if (failure_deadline && now > *failure_deadline) {
      for (int rank : kill_remaining()) {
        log << "launcher: rank " << rank << " still running " << bounds.after_failure_s << " s after rank "
            << result.first_failure->rank << " failed: killed\n";
      }
      break;
    }
    if (now > whole_run_deadline) {
      result.still_running = kill_remaining();
      result.timed_out = true;
      log << "launcher: the whole-run bound of " << bounds.whole_run_s << " s passed; killed the ranks still running:";
      for (int rank : result.still_running) log << " " << rank;
      log << "\n" << std::flush;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (Child& c : children) close(c.control);
  return result;
}

ControlChannel::~ControlChannel() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::string> ControlChannel::poll() {
  if (message_ || fd_ < 0) return message_;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return std::nullopt;
  char chunk[256];
  const ssize_t got = read(fd_, chunk, sizeof chunk);
  if (got == 0) {
    message_ = "the launcher exited (its control pipe closed)";
  } else if (got > 0) {
    buffer_.append(chunk, static_cast<std::size_t>(got));
    const std::size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) message_ = buffer_.substr(0, newline);
  }
  return message_;
}

}  // namespace workbook::multi_gpu

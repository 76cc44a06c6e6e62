// child_process.cpp: the launcher's POSIX pieces (child_process.h).
#include "child_process.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace workbook::multi_gpu {

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

// The launcher's other descriptors (other workers' pipes, files, NCCL's sockets) must not leak
// into a worker.
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

IgnoreSigpipe::IgnoreSigpipe() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  installed_ = sigaction(SIGPIPE, &ignore, &previous_) == 0;
}

IgnoreSigpipe::~IgnoreSigpipe() {
  if (installed_) sigaction(SIGPIPE, &previous_, nullptr);
}

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

void close_pair(int (&fds)[2]) {
  for (int& fd : fds) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

}  // namespace workbook::multi_gpu

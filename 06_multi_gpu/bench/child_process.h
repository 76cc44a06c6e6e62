// child_process.h: the POSIX pieces of the launcher (launcher.cpp), each small and on its own:
// reading a waitpid status, what a child does between fork and execve, writing to a pipe whose
// reader may be gone.
#pragma once

#include "launcher.h"

#include <signal.h>

#include <string>

namespace workbook::multi_gpu {

// A waitpid status as a ChildExit of `rank`, `seconds` after the launch.
ChildExit decode_exit(int rank, int wait_status, double seconds);

// In the child between fork and execve (async-signal-safe): every descriptor above stderr is
// marked close-on-exec, by close_range in one call (Linux 5.11+), else by one fcntl per
// descriptor below `max_fd` (open_file_limit(), read before fork()).
void close_inherited_on_exec(int max_fd);
int open_file_limit();

// Writes all of `message` to a worker's control pipe. false when the worker is already gone
// (EPIPE: its read end closed) or the pipe fails otherwise; the caller goes on either way.
bool tell(int fd, const std::string& message);

// Closes both ends that are open, and marks them closed (-1).
void close_pair(int (&fds)[2]);

// SIGPIPE ignored for the life of the object, the previous disposition restored after: a write to
// the pipe of a rank that has exited (not yet reaped) then fails with EPIPE instead of killing
// the launcher. Made after fork(), so no worker inherits the ignore through execve.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe();
  ~IgnoreSigpipe();
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

}  // namespace workbook::multi_gpu

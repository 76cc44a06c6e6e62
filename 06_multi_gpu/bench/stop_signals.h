// stop_signals.h: how the launcher hears SIGTERM, SIGINT and SIGHUP during a launch, and how the
// program then ends as the signal would have ended it.
//
// SIGTERM (a scheduler, timeout(1)), SIGINT (Ctrl-C) and SIGHUP (the terminal went away) stop a
// launch. The handler only notes the first one and writes each one's number to a self-pipe; the
// supervision loop in launcher.cpp, woken by that pipe, forwards them to the ranks. The ranks stay
// in the launcher's process group (Ctrl-Z and a terminal's Ctrl-C reach all of them at once) and
// keep the default action of these signals, so a second copy (the terminal's and ours) finds a
// rank already ending and changes nothing.
#pragma once

#include <signal.h>

#include <cstddef>
#include <vector>

namespace workbook::multi_gpu {

// Owns the handlers and the self-pipe for one launch. Made before the forks: the forking thread
// blocks the signals, so a child never runs the handler between fork() and execve(); each child
// restores the default action (execve would, but only then) and the mask it should have, and
// ignored signals stay ignored (nohup, `cmd &` in a script). Other threads of the launcher (NCCL's
// bootstrap thread) may run the handler; that is fine, it only writes a byte. The destructor
// puts back the previous actions: a signal after the launch acts as it would have without it.
// One at a time per process: the handlers are the process's.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // In the child after fork() (async-signal-safe): default actions back, the old mask back.
  void reset_in_child() const;
  // In the launcher after the forks: a signal that came meanwhile is handled now.
  void unblock() const;
  // Readable when a signal has come (for poll()).
  int wake_fd() const { return wake_[0]; }
  // The signals received since the last call, in order.
  std::vector<int> take() const;
  // The first signal since this object was made, 0 if none; set by the handler itself, so it
  // also covers one that came after the last take().
  int first() const;

 private:
  static constexpr std::size_t kCount = 3;  // SIGTERM, SIGINT, SIGHUP
  sigset_t mask_{};
  int wake_[2] = {-1, -1};
  struct sigaction previous_[kCount] {};
  bool caught_[kCount] = {};
};

// Ends this process as `signal` would have (after flushing stdout and stderr), so its parent (a
// shell, a scheduler) sees the signal it sent: the shell says 128 + signal. For the program's
// last step after a launch ended by a stop signal.
[[noreturn]] void end_by_signal(int signal);

}  // namespace workbook::multi_gpu

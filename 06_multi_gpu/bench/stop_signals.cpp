// stop_signals.cpp: the handler, its self-pipe, and ending the process by a signal (see the header).
#include "stop_signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace workbook::multi_gpu {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};
volatile sig_atomic_t g_first_stop_signal = 0;
// One launch at a time: the handlers are the process's. Atomic, because a handler may run on
// any thread (NCCL's and CUDA's too) while the launch sets or clears it.
std::atomic<int> g_wake_write_fd{-1};

void on_stop_signal(int sig) {
  const int saved_errno = errno;  // async-signal-safe calls only
  if (g_first_stop_signal == 0) g_first_stop_signal = sig;
  const unsigned char number = static_cast<unsigned char>(sig);
  const int fd = g_wake_write_fd.load();
  if (fd >= 0 && write(fd, &number, 1) < 0) {
    // a full pipe (non-blocking) already holds enough to wake the loop; the first is in the flag
  }
  errno = saved_errno;
}

}  // namespace

static_assert(std::size(kStopSignals) == 3, "StopSignals::kCount");

StopSignals::StopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : kStopSignals) sigaddset(&stop, s);
  pthread_sigmask(SIG_BLOCK, &stop, &mask_);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(error));
  }
  g_first_stop_signal = 0;
  g_wake_write_fd = wake_[1];
  for (std::size_t i = 0; i < kCount; ++i) {
    sigaction(kStopSignals[i], nullptr, &previous_[i]);
    if (previous_[i].sa_handler == SIG_IGN) continue;
    struct sigaction catcher {};
    catcher.sa_handler = on_stop_signal;
    sigemptyset(&catcher.sa_mask);
    catcher.sa_flags = SA_RESTART;
    caught_[i] = sigaction(kStopSignals[i], &catcher, nullptr) == 0;
  }
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < kCount; ++i) {
    if (caught_[i]) sigaction(kStopSignals[i], &previous_[i], nullptr);
  }
  g_wake_write_fd = -1;
  close(wake_[0]);
  close(wake_[1]);
  pthread_sigmask(SIG_SETMASK, &mask_, nullptr);  // one still pending acts as it would have
}

void StopSignals::reset_in_child() const {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (std::size_t i = 0; i < kCount; ++i) {
    if (caught_[i]) sigaction(kStopSignals[i], &default_action, nullptr);
  }
  sigprocmask(SIG_SETMASK, &mask_, nullptr);
}

void StopSignals::unblock() const { pthread_sigmask(SIG_SETMASK, &mask_, nullptr); }

std::vector<int> StopSignals::take() const {
  std::vector<int> signals;
  unsigned char numbers[64];
  ssize_t got = 0;
  while ((got = read(wake_[0], numbers, sizeof numbers)) > 0) signals.insert(signals.end(), numbers, numbers + got);
  return signals;
}

int StopSignals::first() const { return g_first_stop_signal; }

void end_by_signal(int sig) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(sig, &default_action, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  raise(sig);
  _exit(128 + sig);  // not reached for SIGTERM, SIGINT, SIGHUP: their default action ends the process
}

}  // namespace workbook::multi_gpu

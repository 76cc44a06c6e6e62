// rank_environment.cpp: a rank's identity from its environment, multicast off, the launcher's pipes.
#include "rank_environment.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

}  // namespace

std::string variable_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

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
  w.heartbeat_fd = read_int(getenv_fn, kHeartbeatFdVariable).value_or(-1);
  return w;
}

std::string to_hex(const void* bytes, std::size_t count) {
  static const char digits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::string hex(2 * count, '0');
  for (std::size_t i = 0; i < count; ++i) {
    hex[2 * i] = digits[p[i] >> 4];
    hex[2 * i + 1] = digits[p[i] & 15];
  }
  return hex;
}

void from_hex(const std::string& hex, void* bytes, std::size_t count) {
  if (hex.size() != 2 * count) {
    throw std::invalid_argument("hex text has " + std::to_string(hex.size()) + " characters, want " +
                                std::to_string(2 * count));
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument(std::string("'") + c + "' is not a hex digit");
  };
  auto* p = static_cast<unsigned char*>(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    p[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
}

ControlChannel::ControlChannel(int fd, int heartbeat_fd) : fd_(fd), heartbeat_fd_(heartbeat_fd) {
  // Never wait to beat, whoever made the descriptor.
  if (heartbeat_fd_ >= 0) (void)fcntl(heartbeat_fd_, F_SETFL, fcntl(heartbeat_fd_, F_GETFL) | O_NONBLOCK);
}

ControlChannel::~ControlChannel() {
  if (fd_ >= 0) close(fd_);
  if (heartbeat_fd_ >= 0) close(heartbeat_fd_);
}

void ControlChannel::heartbeat() {
  if (heartbeat_fd_ < 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_beat_ < std::chrono::milliseconds(100)) return;
  last_beat_ = now;
  const char beat = '.';
  if (write(heartbeat_fd_, &beat, 1) < 0) {
    // EAGAIN: the pipe is full of beats the launcher has not read yet; it knows this rank is alive
  }
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

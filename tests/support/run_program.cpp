// run_program.cpp: posix_spawn with stdout and stderr redirected to temporary files (two pipes
// read one after the other could deadlock on a chatty program; files cannot).
#include "run_program.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace workbook::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> merged_environment(const Env& overrides) {
  std::vector<std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (overrides.count(name) == 0) merged.push_back(entry);
  }
  for (const auto& [name, value] : overrides) merged.push_back(name + "=" + value);
  return merged;
}

}  // namespace

std::string temp_path(const std::string& stem) {
  static std::atomic<int> counter{0};
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/workbook-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++) + "-" + stem;
}

ProgramResult run_program(const std::vector<std::string>& argv, const Env& env, std::chrono::seconds limit) {
  if (argv.empty()) throw std::invalid_argument("run_program: empty argv");
  const std::string out_path = temp_path("stdout.txt");
  const std::string err_path = temp_path("stderr.txt");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment = merged_environment(env);
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);  // a new group whose id is the child's pid

  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawn_error != 0) {  // as a shell would answer: 127 when the program is not there
    ProgramResult missing;
    missing.exit_code = spawn_error == ENOENT ? 127 : 126;
    missing.err = "cannot start " + argv[0] + ": " + std::strerror(spawn_error) + "\n";
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
    return missing;
  }
  int status = 0;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    if (!timed_out && std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      kill(-pid, SIGKILL);  // the program and everything it started
    }
    usleep(5000);
  }
  kill(-pid, SIGKILL);  // stragglers the program left behind (ESRCH when there are none)

  ProgramResult result;
  result.exit_code = timed_out ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  if (timed_out) result.err += "run_program: killed after " + std::to_string(limit.count()) + " s\n";
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return result;
}

std::vector<std::string> with_args(std::vector<std::string> command, const std::vector<std::string>& args) {
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

const Env& without_gpus() {
  static const Env hidden{{"CUDA_VISIBLE_DEVICES", ""}};
  return hidden;
}

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open JSON file " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("cannot parse JSON file " + path + ": " + e.what());
  }
}

nlohmann::json take_json(const std::string& path) {
  nlohmann::json parsed = read_json(path);
  std::remove(path.c_str());
  return parsed;
}

std::string last_line(const std::string& text) {
  const std::size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "";
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end + 1 - begin);
}

std::string report_after_provenance(const std::string& text) {
  if (text.rfind("# provenance: ", 0) != 0) return text;
  const std::size_t newline = text.find('\n');
  return newline == std::string::npos ? "" : text.substr(newline + 1);
}

}  // namespace workbook::testing

// provenance.cpp: the record of where a result came from (provenance.h).
#include "provenance.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

// The commit and the state of the tree, written at build time by cmake/WorkbookGitState.cmake. A
// program built without CMake (a README's one-line nvcc command) says it does not know.
#if __has_include("workbook_git_state.h")
#include "workbook_git_state.h"
#else
#define WORKBOOK_GIT_COMMIT "unknown"
#define WORKBOOK_GIT_TREE "unknown"
#define WORKBOOK_SOURCE_DIR ""
#endif

namespace workbook {
namespace {

std::string& command_line() {
  static std::string line;
  return line;
}

std::map<std::string, std::string>& libraries() {
  static std::map<std::string, std::string> noted;
  return noted;
}

// An argument as a shell would need it typed: quoted when it holds anything but plain characters.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789-_./=:,+@%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);  // as Python's shlex.quote
  return quoted + "'";
}

// Paths inside the workbook are written from its root, so the record reads the same on every machine.
std::string relative_to_workbook(std::string word) {
  const std::string root = std::string(WORKBOOK_SOURCE_DIR) + "/";
  if (root.size() <= 1) return word;
  for (std::size_t at = word.find(root); at != std::string::npos; at = word.find(root, at)) word.erase(at, root.size());
  return word;
}

std::string version_text(int version) {  // CUDA's 13000 -> "13.0"
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The kernel module's version ("580.159.04"), as nvidia-smi shows it; where that file is missing
// (another OS, a container without it), the CUDA version the driver supports.
std::string driver_version() {
  // "NVRM version: NVIDIA UNIX [Open Kernel Module for x86_64|x86_64 Kernel Module]  580.159.04  ...":
  // the first word after "Module" made of digits and dots.
  std::ifstream file("/proc/driver/nvidia/version");
  bool after_module = false;
  for (std::string word; file >> word;) {
    after_module = after_module || word == "Module";
    if (after_module && word.find('.') != std::string::npos && word.find_first_not_of("0123456789.") == std::string::npos) {
      return word;
    }
  }
  int version = 0;
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) return "CUDA " + version_text(version);
  return "none";
}

std::string uuid_text(const cudaUUID_t& uuid) {  // "GPU-8f1c2d3e-...", as nvidia-smi -L prints it
  static const int groups[] = {4, 2, 2, 2, 6};
  std::string text = "GPU-";
  int byte = 0;
  for (int g = 0; g < 5; ++g) {
    if (g > 0) text += '-';
    for (int i = 0; i < groups[g]; ++i, ++byte) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[byte]));
      text += hex;
    }
  }
  return text;
}

// The devices this process sees. Without a driver or a device the list is empty and the runtime's
// error is cleared: a provenance record never fails a run.
nlohmann::json visible_gpus() {
  nlohmann::json gpus = nlohmann::json::array();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return gpus;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    gpus.push_back({{"name", prop.name}, {"uuid", uuid_text(prop.uuid)}});
  }
  return gpus;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
}

}  // namespace

void record_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + shell_word(relative_to_workbook(argv[i]));
  command_line() = line;
}

void note_library(const std::string& name, const std::string& version) { libraries()[name] = version; }

nlohmann::json provenance() {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) (void)cudaGetLastError();
  const char* run = std::getenv("WORKBOOK_RUN");
  return {{"commit", WORKBOOK_GIT_COMMIT},
          {"tree", WORKBOOK_GIT_TREE},
          {"gpus", visible_gpus()},
          {"driver", driver_version()},
          {"cuda_runtime", runtime > 0 ? version_text(runtime) : "none"},
          {"cuda_toolkit", version_text(CUDART_VERSION)},
          {"libraries", libraries()},
          {"host", host_name()},
          {"run", run != nullptr && *run != '\0' ? nlohmann::json(run) : nlohmann::json(nullptr)},
          {"date", utc_now()},
          {"command", command_line()}};
}

// One line, the same fields in the same order as common/provenance.py's line().
std::string provenance_line(const nlohmann::json& p) {
  std::ostringstream line;
  line << "# provenance: commit " << p["commit"].get<std::string>().substr(0, 12) << " ("
       << p["tree"].get<std::string>() << "), ";
  const auto& gpus = p["gpus"];
  if (gpus.empty()) {
    line << "no GPU";
  } else {
    line << gpus.size() << " x " << gpus[0]["name"].get<std::string>();
  }
  line << ", driver " << p["driver"].get<std::string>() << ", CUDA runtime " << p["cuda_runtime"].get<std::string>()
       << ", toolkit " << p["cuda_toolkit"].get<std::string>();
  for (const auto& [name, version] : p["libraries"].items()) line << ", " << name << " " << version.get<std::string>();
  line << ", host " << p["host"].get<std::string>();
  if (!p["run"].is_null()) line << ", run " << p["run"].get<std::string>();
  line << ", " << p["date"].get<std::string>() << ": " << p["command"].get<std::string>() << "\n";
  return line.str();
}

}  // namespace workbook

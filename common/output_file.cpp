// output_file.cpp: checks of the files a flag names, and the one write of an output file.
#include "output_file.h"

#include "exit_codes.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace workbook {

namespace {

// Whether an existing file is one the workbook wrote, and so one a rerun may replace. Proven by
// what the workbook writes into every file, its provenance (provenance.h), never guessed from the
// file's shape: a JSON object with a "provenance" record, or a CSV whose first line is the
// provenance line. Anything else (CMakePresets.json, a reader's own table) is kept.
bool written_by_the_workbook(const std::string& path, const std::string& extension) {
  std::ifstream in(path);
  if (extension == ".csv") {
    std::string header;
    std::getline(in, header);
    return header.rfind("# provenance: commit ", 0) == 0;
  }
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  return j.is_object() && j.contains("provenance") && j["provenance"].is_object() && j["provenance"].contains("commit");
}

}  // namespace

void require_output_file(const std::string& flag, const std::string& path, const std::string& extension) {
  if (path.empty()) throw UsageError(flag + " needs a file name");
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw UsageError(flag + " " + path + ": is a folder; name the file to write (e.g. " +
                     (std::filesystem::path(path) / ("out" + extension)).string() + ")");
  }
  if (std::filesystem::path(path).extension() != extension) {
    throw UsageError(flag + " " + path + ": name a " + extension + " file (it is overwritten)");
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, error)) {
    throw UsageError(flag + " " + path + ": the folder '" + folder.string() + "' does not exist");
  }
  // Appending nothing tries the write without truncating a file that is there.
  const bool existed = std::filesystem::exists(path, error);
  if (existed && std::filesystem::file_size(path, error) > 0 && !written_by_the_workbook(path, extension)) {
    throw UsageError(flag + " " + path +
                     ": is there and is not a file the workbook wrote; name another (it would be overwritten)");
  }
  const bool writable = static_cast<bool>(std::ofstream(path, std::ios::app));
  if (!existed) std::filesystem::remove(path, error);
  if (!writable) throw UsageError(flag + " " + path + ": cannot be written");
}

void require_distinct_outputs(const std::string& flag_a, const std::string& path_a, const std::string& flag_b,
                              const std::string& path_b) {
  if (path_a.empty() || path_b.empty() || path_a == "-" || path_b == "-") return;
  std::error_code error;
  const auto a = std::filesystem::weakly_canonical(std::filesystem::absolute(path_a, error), error);
  const auto b = std::filesystem::weakly_canonical(std::filesystem::absolute(path_b, error), error);
  if (a == b) {
    throw UsageError(flag_a + " and " + flag_b + " name the same file, " + path_b + "; one would overwrite the other");
  }
}

void write_output_file(const std::string& flag, const std::string& path, const std::string& text) {
  // C stdio, because it sets errno on failure and iostreams do not promise to; a full disk often
  // shows only when the buffer is flushed, at fclose.
  errno = 0;
  std::FILE* file = std::fopen(path.c_str(), "w");
  int error = file == nullptr ? errno : 0;
  if (file != nullptr) {
    if (std::fwrite(text.data(), 1, text.size(), file) != text.size()) error = errno;
    if (std::fclose(file) != 0 && error == 0) error = errno;
  }
  if (file == nullptr || error != 0) {
    throw std::runtime_error("cannot write " + flag + " file '" + path + "': " +
                             (error != 0 ? std::strerror(error) : "the write failed"));
  }
}

void require_input_file(const std::string& flag, const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw UsageError(flag + " " + path + ": no such file");
  if (std::filesystem::is_directory(path, error)) throw UsageError(flag + " " + path + ": is a folder, not a file");
  if (!std::ifstream(path)) throw UsageError(flag + " " + path + ": cannot be read");
}

}  // namespace workbook

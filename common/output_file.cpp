// output_file.cpp: checks of the files a flag names, and the one write of an output file.
#include "output_file.h"

#include "exit_codes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace workbook {

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
  const bool writable = static_cast<bool>(std::ofstream(path, std::ios::app));
  if (!existed) std::filesystem::remove(path, error);
  if (!writable) throw UsageError(flag + " " + path + ": cannot be written");
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

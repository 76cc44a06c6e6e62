// cli.h: the flags every chapter shares, and readable range checks.
//
//   CLI::App app{"What this chapter measures"};
//   workbook::CommonOptions common;
//   workbook::add_common_options(app, common);            // --device N, --json [FILE], --quick
//   app.add_option("--repeats", repeats, "timed repeats per size");
//   if (auto code = workbook::parse_command_line(app, argc, argv)) return *code;
//   workbook::require_at_least("--repeats", repeats, 1);  // "--repeats must be at least 1, got 0"
#pragma once

#include "exit_codes.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace workbook {

struct CommonOptions {
  int device = 0;
  std::optional<std::string> json;  // set by --json; "-" means stdout
  bool quick = false;               // small sizes and few repeats, for the tests
};

enum class DeviceFlag { kIndex, kNone };  // kNone: the chapter defines its own --device

void add_common_options(CLI::App& app, CommonOptions& options, DeviceFlag device = DeviceFlag::kIndex);

// Parses the command line. Returns std::nullopt to go on, or the exit code to return now:
// 0 after --help, 2 after a parse error (printed as one line on stderr).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

// CLI11 reads "-1" into an unsigned option as a huge positive number: give size flags a signed
// type and check them here.
template <class T>
void require_at_least(const char* flag, T value, std::common_type_t<T> minimum) {
  if (!(value >= minimum)) {
    std::ostringstream message;
    message << flag << " must be at least " << minimum << ", got " << value;
    throw UsageError(message.str());
  }
}

template <class T>
void require_at_most(const char* flag, T value, std::common_type_t<T> maximum) {
  if (!(value <= maximum)) {
    std::ostringstream message;
    message << flag << " must be at most " << maximum << ", got " << value;
    throw UsageError(message.str());
  }
}

// Finite and greater than zero (a learning rate, a time).
void require_positive(const char* flag, double value);

// The parts of a comma list flag ("1,2,4"), empty ones kept ("1,,2" and "1," have an empty part),
// so that the caller can refuse them with the flag's name.
std::vector<std::string> split_commas(const std::string& text);

}  // namespace workbook

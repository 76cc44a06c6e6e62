// cli.h: the flags every chapter shares, and readable range checks.
//
//   CLI::App app{"What this chapter measures"};
//   workbook::CommonOptions common;
//   workbook::add_common_options(app, common);            // --device N, --json [FILE], --quick
//   app.add_option("--repeats", repeats, "timed repeats per size");
//   if (auto code = workbook::parse_command_line(app, argc, argv)) return *code;
//   workbook::require_at_least("--repeats", repeats, 1);  // "--repeats must be at least 1, got 0"
//   workbook::add_size_option(app, "--points", points, "number of points"); // 5000, 50K, 5M or 2G
//   auto streams = workbook::parse_int_list("--streams", "1,2,4", 1, 64);   // "1,,2" is refused
//
// One syntax for every size (points, elements, bytes, MiB): digits with an optional K, M or G
// suffix, capitals, meaning 1e3, 1e6 and 1e9 (decimal, as in "5M points"). Every number is
// decimal: "0x10", "010" and "0b1" are refused whatever the flag (parse_command_line). One syntax for
// every --device: N, cuda (device 0) or cuda:N, as torch.device spells it.
#pragma once

#include "common_options.h"
#include "exit_codes.h"
#include "output_file.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace workbook {

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
// The longest wait a flag may set (--timeout-s and the like): a day. A larger value would only
// overflow the clock it is added to.
inline constexpr double kMaxWaitSeconds = 86400.0;


// The parts of a comma list flag ("1,2,4"), empty ones kept ("1,,2" and "1," have an empty part),
// so that the caller can refuse them with the flag's name.
std::vector<std::string> split_commas(const std::string& text);

// The items of a list flag: split_commas, refusing an empty list and an empty item ("1,,2",
// ",1", "1,") with a UsageError naming the flag. The typed lists below also refuse a value given
// twice ("4,4": it would only run the same case again).
std::vector<std::string> list_items(const std::string& flag, const std::string& text);

// A size: "5000", "50K", "5M", "2G" (K, M, G: 1e3, 1e6, 1e9). nullopt for anything else (empty, a
// sign, a leading zero, a decimal point, spaces, a small k, m or g, another suffix) and above the
// int64 range.
std::optional<std::int64_t> parse_size(const std::string& text);

// parse_size for a flag's value: throws UsageError "--points: '5X' is not a size (...)".
std::int64_t size_value(const std::string& flag, const std::string& text);

// Lists of sizes ("500,5K,5M") and of plain whole numbers ("1,2,4"), every item within
// [minimum, maximum]; UsageError naming the flag and the item otherwise.
std::vector<std::int64_t> parse_size_list(const std::string& flag, const std::string& text, std::int64_t minimum,
                                          std::int64_t maximum);
std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int minimum, int maximum);

// A size flag: the value goes through size_value into `target` (any integer type). The flag is
// counted as usual (app.count(name)), so --quick defaults still yield to it.
template <class T>
CLI::Option* add_size_option(CLI::App& app, const std::string& name, T& target, const std::string& description) {
  static_assert(std::is_integral_v<T>, "a size option holds an integer");
  return app
      .add_option_function<std::string>(
          name,
          [name, &target](const std::string& text) {
            const std::int64_t value = size_value(name, text);
            if (static_cast<std::uint64_t>(value) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
              throw UsageError(name + " must be at most " + std::to_string(std::numeric_limits<T>::max()) +
                               ", got " + text);
            }
            target = static_cast<T>(value);
          },
          description)
      ->type_name("SIZE");
}

// --seed: digits only, up to 2^64 - 1. CLI11 would read "-1" into an unsigned seed as 2^64 - 1;
// here it is a UsageError naming the flag.
CLI::Option* add_seed_option(CLI::App& app, std::uint64_t& seed, const std::string& description);

// --device itself, read by parse_device (common_options.h) into `device` (for programs that also
// run on the CPU: DeviceFlag::kNone above, then this with CpuDevice::kAllowed).
CLI::Option* add_device_choice(CLI::App& app, DeviceChoice& device, CpuDevice cpu, const std::string& description);

}  // namespace workbook

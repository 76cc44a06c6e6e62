// cli.cpp: shared flags and the parse step that maps CLI11's errors to exit codes.
#include "cli.h"

#include "provenance.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <limits>
#include <system_error>

namespace workbook {

void add_common_options(CLI::App& app, CommonOptions& options, DeviceFlag device) {
  if (device == DeviceFlag::kIndex) {
    app.add_option_function<std::string>(
           "--device", [&options](const std::string& text) { options.device = parse_device(text).index; },
           "CUDA device: N, cuda or cuda:N (as torch.device('cuda', N); default 0)")
        ->type_name("N");
  }
  app.add_option_function<std::string>(
         "--json",
         [&options](const std::string& path) {
           // Refused now, not after the whole run has printed.
           if (!path.empty() && path != "-") require_output_file("--json", path, ".json");
           options.json = path.empty() ? "-" : path;
         },
         "also write the results as one JSON object to FILE (stdout when FILE is - or omitted)")
      ->expected(0, 1)
      ->type_name("[FILE]");
  app.add_flag("--quick", options.quick, "small sizes and few repeats (what the tests run)");
}

namespace {

// The program's own name, as guarded_main's error lines give it (parse_command_line names the app
// after argv[0]'s file name; a test's app may carry another).
std::string program_name(const CLI::App& app) { return std::filesystem::path(app.get_name()).filename().string(); }

// `--noise ''` or `--noise=`: CLI11 would read the empty text as 0 (or as "not given"), so that a
// value lost to a shell variable that was never set would run as if it meant something.
void refuse_empty_values(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string before = i > 1 ? argv[i - 1] : "";
    const bool empty_after_flag = arg.empty() && before.rfind("--", 0) == 0 && before.find('=') == std::string::npos;
    const bool empty_after_equals = arg.rfind("--", 0) == 0 && !arg.empty() && arg.back() == '=';
    const CLI::Option* option = empty_after_flag ? app.get_option_no_throw(before) : nullptr;
    if (empty_after_flag && option != nullptr && option->get_expected_max() == 0) {
      throw UsageError("unexpected argument: '' (" + before + " takes no value)");
    }
    if (arg.empty() && !empty_after_flag) throw UsageError("unexpected argument: '' (an empty word)");
    if (empty_after_flag) throw UsageError(before + " needs a value, and '' is none");
    if (empty_after_equals) throw UsageError(arg.substr(0, arg.size() - 1) + " needs a value, and '' is none");
  }
}

// CLI11 reads "0x10" as 16, "010" as 8 (octal) and a float "0x1p3" as 8: number forms the workbook
// documents nowhere, and a leading zero that silently changes an epoch count. Every number is
// written in decimal, so a value in one of those forms is refused whatever flag it belongs to.
void refuse_other_number_forms(int argc, char** argv) {
  // Number-shaped only: a path such as 04_linear_regression/x.json or 01.json is a value of its own.
  // "0", "0.5" and "0e3" are decimal.
  static const std::regex other_form(
      "[+-]?0([0-9]+(\\.[0-9]*)?([eE][+-]?[0-9]+)?|[xX][0-9a-fA-F.]+([pP][+-]?[0-9]+)?|[bB][01]+|[oO][0-7]+)");
  static const std::regex negative_number("-[0-9.].*");              // a value, not a flag
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t equals = arg.find('=');
    const bool long_with_value = arg.rfind("--", 0) == 0 && equals != std::string::npos;
    const std::string value = long_with_value ? arg.substr(equals + 1) : arg;
    const bool a_flag = !long_with_value && arg.rfind('-', 0) == 0 && !std::regex_match(arg, negative_number);
    if (a_flag || !std::regex_match(value, other_form)) continue;
    const std::string before = i > 1 ? argv[i - 1] : "";
    const std::string flag = long_with_value ? arg.substr(0, equals) : before.rfind('-', 0) == 0 ? before : "argument";
    throw UsageError(flag + ": '" + value + "' is not a decimal number (write numbers in decimal, without leading zeros)");
  }
}

// CLI11 reads `--quick=3` as `--quick`: a flag given a value is refused, not guessed at.
void refuse_values_for_flags(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t equals = arg.find('=');
    if (arg.rfind("--", 0) != 0 || equals == std::string::npos) continue;
    const std::string name = arg.substr(0, equals);
    std::vector<const CLI::App*> apps{&app};
    for (std::size_t a = 0; a < apps.size(); ++a) {
      for (const CLI::App* sub : apps[a]->get_subcommands([](const CLI::App*) { return true; })) apps.push_back(sub);
      const CLI::Option* option = apps[a]->get_option_no_throw(name);
      if (option != nullptr && option->get_expected_max() == 0) {
        throw UsageError(name + " takes no value, got '" + arg + "'");
      }
    }
  }
}

// CLI11's words for the common mistakes, in the workbook's: "unexpected arguments: --bogus x" for
// "The following arguments were not expected: x --bogus" (CLI11 lists them last first); "--lr:
// 'abc' is not a number" for "Could not convert: --lr = abc" ("not a whole number" for 1.5, "out
// of range" for an integer too large, "not a number here (K, M and G are for sizes...)" for 1K); "--device needs a value" for "--device: 1 required DEVICE
// missing". Anything else is CLI11's message as it is.
std::string usage_message(const CLI::ParseError& e) {
  const std::string text = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::size_t colon = text.find(": ");
    std::vector<std::string> extras;
    std::istringstream words(colon == std::string::npos ? "" : text.substr(colon + 2));
    for (std::string word; words >> word;) extras.insert(extras.begin(), word);
    std::string message = extras.size() == 1 ? "unexpected argument:" : "unexpected arguments:";
    for (const std::string& word : extras) message += " " + word;
    return message;
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    const std::string prefix = "Could not convert: ";
    const std::size_t equals = text.find(" = ");
    if (text.rfind(prefix, 0) == 0 && equals != std::string::npos) {
      const std::string flag = text.substr(prefix.size(), equals - prefix.size());
      const std::string value = text.substr(equals + 3);
      if (std::regex_match(value, std::regex("-?[0-9]+"))) return flag + ": " + value + " is out of range";
      if (std::regex_match(value, std::regex("[0-9]*\\.?[0-9]+[KMG]"))) {
        return flag + ": '" + value + "' is not a number here (K, M and G are for sizes, such as --points 5M)";
      }
      char* end = nullptr;
      const bool decimal = !value.empty() && (std::strtod(value.c_str(), &end), *end == '\0');
      return flag + ": '" + value + "' is not a " + (decimal ? "whole number" : "number");
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    const std::size_t colon = text.find(':');
    if (colon != std::string::npos && text.find("missing", colon) != std::string::npos) {
      return text.substr(0, colon) + " needs a value";
    }
    if (colon != std::string::npos) return text.substr(0, colon) + " takes one value";
  }
  return text;
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    // Named by its file name, not the path typed: "Usage: linear_regression [OPTIONS]" and "(see
    // linear_regression --help)" read the same whichever folder it was started from.
    if (argc > 0 && app.get_name().empty()) app.name(std::filesystem::path(argv[0]).filename().string());
    record_command_line(argc, argv);  // for the provenance of what the program writes
    refuse_empty_values(app, argc, argv);
    refuse_values_for_flags(app, argc, argv);
    refuse_other_number_forms(argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // CLI11's own exit codes (105, 109, ...) would read as crashes; every usage error is 2.
    std::cerr << "error: " << usage_message(e) << " (see " << program_name(app) << " --help)\n";
    return kExitUsage;
  } catch (const UsageError& e) {  // from a flag's own parser (sizes, --device)
    std::cerr << "error: " << e.what() << " (see " << program_name(app) << " --help)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.emplace_back();
  return parts;
}

std::vector<std::string> list_items(const std::string& flag, const std::string& text) {
  const std::vector<std::string> items = split_commas(text);
  if (items.empty()) throw UsageError(flag + " needs at least one value");
  for (const std::string& item : items) {
    if (item.empty()) throw UsageError(flag + ": '" + text + "' has an empty item");
  }
  return items;
}

std::optional<std::int64_t> parse_size(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits + 1 < text.size() || (digits > 1 && text[0] == '0')) return std::nullopt;
  std::int64_t scale = 1;
  if (digits < text.size()) {
    switch (text[digits]) {
      case 'K': scale = 1'000; break;  // capitals only: "5m" could as well mean milli
      case 'M': scale = 1'000'000; break;
      case 'G': scale = 1'000'000'000; break;
      default: return std::nullopt;
    }
  }
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const int digit = text[i] - '0';
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (value > kMax / scale) return std::nullopt;
  return value * scale;
}

std::int64_t size_value(const std::string& flag, const std::string& text) {
  const auto value = parse_size(text);
  if (!value) {
    throw UsageError(flag + ": '" + text + "' is not a size (use digits with an optional K, M or G: 5000, 50K, 5M)");
  }
  return *value;
}

std::vector<std::int64_t> parse_size_list(const std::string& flag, const std::string& text, std::int64_t minimum,
                                          std::int64_t maximum) {
  std::vector<std::int64_t> values;
  for (const std::string& item : list_items(flag, text)) {
    const std::int64_t value = size_value(flag, item);
    require_at_least(flag.c_str(), value, minimum);
    require_at_most(flag.c_str(), value, maximum);
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      throw UsageError(flag + ": '" + text + "' lists " + item + " twice");
    }
    values.push_back(value);
  }
  return values;
}

std::vector<int> parse_int_list(const std::string& flag, const std::string& text, int minimum, int maximum) {
  std::vector<int> values;
  for (const std::string& item : list_items(flag, text)) {
    const bool digits_only = item.find_first_not_of("0123456789") == std::string::npos;
    const auto value = digits_only ? parse_size(item) : std::nullopt;
    if (!value) throw UsageError(flag + ": '" + item + "' is not a whole number (use e.g. 1,2,4)");
    require_at_least(flag.c_str(), *value, minimum);
    require_at_most(flag.c_str(), *value, maximum);
    if (std::find(values.begin(), values.end(), static_cast<int>(*value)) != values.end()) {
      throw UsageError(flag + ": '" + text + "' lists " + item + " twice");
    }
    values.push_back(static_cast<int>(*value));
  }
  return values;
}

CLI::Option* add_device_choice(CLI::App& app, DeviceChoice& device, CpuDevice cpu, const std::string& description) {
  return app
      .add_option_function<std::string>(
          "--device", [&device, cpu](const std::string& text) { device = parse_device(text, cpu); }, description)
      ->type_name("DEVICE");
}

CLI::Option* add_seed_option(CLI::App& app, std::uint64_t& seed, const std::string& description) {
  return app
      .add_option_function<std::string>(
          "--seed",
          [&seed](const std::string& text) {
            std::uint64_t value = 0;
            const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
            for (std::size_t i = 0; digits && i < text.size(); ++i) {
              const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
              if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
                throw UsageError("--seed must be at most " + std::to_string(std::numeric_limits<std::uint64_t>::max()) +
                                 ", got " + text);
              }
              value = value * 10 + digit;
            }
            if (!digits) throw UsageError("--seed must be a whole number of at least 0, got '" + text + "'");
            seed = value;
          },
          description)
      ->type_name("S");
}

DeviceChoice parse_device(const std::string& text, CpuDevice cpu) {
  DeviceChoice d;
  if (cpu == CpuDevice::kAllowed && text == "cpu") {
    d.cpu = true;
    return d;
  }
  if (text == "cuda") return d;
  const std::string index = text.rfind("cuda:", 0) == 0 ? text.substr(5) : text;
  const bool digits_only = !index.empty() && index.size() <= 9 && (index.size() == 1 || index[0] != '0') &&
                           index.find_first_not_of("0123456789") == std::string::npos;  // decimal: no "01"
  if (!digits_only) {
    throw UsageError(std::string("--device must be ") + (cpu == CpuDevice::kAllowed ? "cpu, " : "") +
                     "N, cuda or cuda:N (e.g. 0 or cuda:1), got '" + text + "'");
  }
  d.index = std::stoi(index);
  return d;
}

void require_positive(const char* flag, double value) {
  if (!std::isfinite(value) || value <= 0.0) {
    std::ostringstream message;
    message << flag << " must be a finite number greater than 0, got " << value;
    throw UsageError(message.str());
  }
}

}  // namespace workbook

// cli.cpp: shared flags and the parse step that maps CLI11's errors to exit codes.
#include "cli.h"

#include <iostream>

namespace workbook {

void add_common_options(CLI::App& app, CommonOptions& options, DeviceFlag device) {
  if (device == DeviceFlag::kIndex) {
    app.add_option("--device", options.device, "CUDA device index (as in torch.device('cuda', N))")
        ->type_name("N");
  }
  app.add_option_function<std::string>(
         "--json", [&options](const std::string& path) { options.json = path.empty() ? "-" : path; },
         "also write the results as one JSON object to FILE (stdout when FILE is - or omitted)")
      ->expected(0, 1)
      ->type_name("[FILE]");
  app.add_flag("--quick", options.quick, "small sizes and few repeats (what the tests run)");
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // CLI11's own exit codes (105, 109, ...) would read as crashes; every usage error is 2.
    std::cerr << "error: " << e.what() << " (see " << app.get_name() << " --help)\n";
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

void require_positive(const char* flag, double value) {
  if (!std::isfinite(value) || value <= 0.0) {
    std::ostringstream message;
    message << flag << " must be a finite number greater than 0, got " << value;
    throw UsageError(message.str());
  }
}

}  // namespace workbook

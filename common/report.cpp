// report.cpp: verdict line and JSON output.
#include "report.h"

#include "exit_codes.h"
#include "output_file.h"
#include "provenance.h"

#include <iostream>
#include <stdexcept>

namespace workbook {

Report::Report(std::string program, std::optional<std::string> json_path)
    : program_(std::move(program)), json_path_(std::move(json_path)), provenance_(::workbook::provenance()) {  // the free function, not the accessor
  out() << provenance_line(provenance_);
}

std::ostream& Report::out() const {
  const bool json_on_stdout = json_path_ && *json_path_ == "-";
  return json_on_stdout ? std::cerr : std::cout;
}

void Report::check(bool ok, const std::string& what) {
  if (!ok) failures_.push_back(what);
}

int Report::finish() {
  json_["program"] = program_;
  json_["provenance"] = provenance_;
  json_["passed"] = passed();
  json_["failures"] = failures_;
  if (json_path_) {
    const std::string text = json_.dump(2) + "\n";
    if (*json_path_ == "-") {
      std::cout << text << std::flush;
    } else {
      write_output_file("--json", *json_path_, text);
    }
  }
  if (passed()) {
    out() << "PASS\n";
  } else {
    std::string line = "FAIL: " + failures_.front();
    if (failures_.size() > 1) line += " (and " + std::to_string(failures_.size() - 1) + " more)";
    out() << line << "\n";
  }
  out().flush();
  return passed() ? kExitOk : kExitFailure;
}

}  // namespace workbook

// report.h: a program's two outputs, the human report and the --json object, and its verdict.
//
//   workbook::Report report("transfer", options.json);
//   report.out() << "pinned H2D: " << gbps << " GB/s\n";
//   report.json()["h2d_pinned_gbps"] = gbps;
//   report.check(bytes_equal, "round trip differs from the input");
//   return report.finish();            // prints PASS or FAIL: <what>, writes the JSON, 0 or 1
//
// With `--json FILE` the JSON object goes to FILE; with `--json` or `--json -` it goes to stdout,
// and the human report moves to stderr so that stdout stays one parseable object. Both carry the
// run's provenance (provenance.h): the report as its first line, the JSON as "provenance".
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace workbook {

class Report {
 public:
  // Prints the provenance line: the first line of the human report.
  Report(std::string program, std::optional<std::string> json_path);

  std::ostream& out() const;
  nlohmann::json& json() { return json_; }

  // Records a failed check when `ok` is false; the first failure becomes the FAIL line.
  void check(bool ok, const std::string& what);
  bool passed() const { return failures_.empty(); }
  // The record printed first and written as "provenance", for the program's other files.
  const nlohmann::json& provenance() const { return provenance_; }

  // Adds "program", "provenance", "passed" and "failures" to the JSON, writes it, prints the last line and
  // returns the exit code (kExitOk or kExitFailure). Throws if the JSON file cannot be written.
  int finish();

 private:
  std::string program_;
  std::optional<std::string> json_path_;
  nlohmann::json provenance_;
  nlohmann::json json_ = nlohmann::json::object();
  std::vector<std::string> failures_;
};

}  // namespace workbook

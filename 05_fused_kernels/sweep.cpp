// sweep.cpp: the sweep's sizes, and its rows as text, CSV and JSON.
#include "sweep.h"

#include "cli.h"  // parse_size_list
#include "format.h"
#include "exit_codes.h"
#include "table.h"  // timing

#include <algorithm>

namespace workbook::fused {

std::vector<std::int64_t> default_sweep_sizes() {
  return {500, 5'000, 50'000, 100'000, 500'000, 5'000'000, 10'000'000, 50'000'000, 100'000'000};
}

std::vector<std::int64_t> parse_sizes(const std::string& text) {
  return parse_size_list("--sizes", text, 2, 2'000'000'000);
}

std::string csv_header() {
  return "implementation,variant,points,train_points,epochs,lr,median_ms,min_ms,max_ms,runs,us_per_epoch,gbps,"
         "copy_gbps,copy_fraction,passed,w,b";
}

std::string table_header() {
  return "       points  variant            ms   us/epoch      GB/s  of copy";
}

std::string table_line(const SweepRow& r) {
  const double ms = r.training.median;
  const double gbps = r.passed ? achieved_gbps(r.train_points, r.epochs, ms) : 0.0;
  return format("%13lld  %-14s %9.3f %10.2f %9.0f %7.1f%%%s", static_cast<long long>(r.points), r.variant.c_str(),
                ms, r.passed ? us_per_epoch(r.epochs, ms) : 0.0, gbps,
                r.copy_gbps > 0 ? 100.0 * gbps / r.copy_gbps : 0.0, r.passed ? "" : "  FAILED check");
}

void write_csv(std::ostream& out, const std::vector<SweepRow>& rows) {
  out << csv_header() << "\n";
  for (const SweepRow& r : rows) {
    const Stats& t = r.training;
    const double gbps = achieved_gbps(r.train_points, r.epochs, t.median);
    out << format("%s,%s,%lld,%lld,%d,%.9g,%.9g,%.9g,%.9g,%zu,%.9g,%.9g,%.9g,%.9g,%d,%.9g,%.9g\n",
                  r.implementation.c_str(), r.variant.c_str(), static_cast<long long>(r.points),
                  static_cast<long long>(r.train_points), r.epochs, r.lr, t.median, t.min, t.max, t.count,
                  us_per_epoch(r.epochs, t.median), gbps, r.copy_gbps, r.copy_gbps > 0 ? gbps / r.copy_gbps : 0.0,
                  r.passed ? 1 : 0, r.w, r.b);
  }
}

nlohmann::json to_json(const SweepRow& r) {
  const double gbps = achieved_gbps(r.train_points, r.epochs, r.training.median);
  nlohmann::json j = {{"implementation", r.implementation},
          {"variant", r.variant},
          {"points", r.points},
          {"train_points", r.train_points},
          {"epochs", r.epochs},
          {"lr", r.lr},
          {"us_per_epoch", us_per_epoch(r.epochs, r.training.median)},
          {"gbps", gbps},
          {"copy_gbps", r.copy_gbps},
          {"copy_fraction", r.copy_gbps > 0 ? gbps / r.copy_gbps : 0.0},
          {"passed", r.passed},
          {"w", r.w},
          {"b", r.b}};
  if (r.training.count > 0) j["training_ms"] = timing(r.training);
  return j;
}

}  // namespace workbook::fused

// sweep.cpp: sizes, variants, learning rate per size, bandwidth arithmetic and the CSV/JSON rows.
#include "sweep.h"

#include "cli.h"  // split_commas, parse_size_list
#include "exit_codes.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace workbook::fused {

std::vector<std::int64_t> default_sweep_sizes() {
  return {500, 5'000, 50'000, 100'000, 500'000, 5'000'000, 10'000'000, 50'000'000, 100'000'000};
}

std::vector<std::int64_t> parse_sizes(const std::string& text) {
  return parse_size_list("--sizes", text, 2, 2'000'000'000);
}

std::vector<Variant> parse_variants(const std::string& text) {
  if (text == "all") return all_variants();
  std::vector<Variant> variants;
  for (const std::string& part : list_items("--variant", text)) {
    if (part.size() != 1 || part[0] < '1' || part[0] > '0' + kVariantCount) {
      throw UsageError("--variant must be 'all' or a list of 1.." + std::to_string(kVariantCount) + ", got '" +
                       text + "'");
    }
    const Variant v = static_cast<Variant>(part[0] - '0');
    if (std::find(variants.begin(), variants.end(), v) == variants.end()) variants.push_back(v);
  }
  if (variants.empty()) throw UsageError("--variant must be 'all' or a list of 1..7, got ''");
  return variants;
}

double sweep_lr(double base_lr, std::int64_t points) {
  if (points <= kArticlePoints) return base_lr;
  const double ratio = static_cast<double>(kArticlePoints) / static_cast<double>(points);
  return base_lr * ratio * ratio;
}

double bytes_read_per_epoch(std::int64_t train_points) { return 8.0 * static_cast<double>(train_points); }

double achieved_gbps(std::int64_t train_points, int epochs, double ms) {
  return bytes_read_per_epoch(train_points) * epochs / (ms * 1e6);
}

double us_per_epoch(int epochs, double ms) { return ms * 1e3 / epochs; }

std::string csv_header() {
  return "implementation,variant,points,train_points,epochs,lr,median_ms,min_ms,max_ms,repeats,us_per_epoch,gbps,"
         "copy_gbps,copy_fraction,passed,w,b";
}

void write_csv(std::ostream& out, const std::vector<SweepRow>& rows) {
  out << csv_header() << "\n";
  for (const SweepRow& r : rows) {
    const double gbps = achieved_gbps(r.train_points, r.epochs, r.median_ms);
    std::ostringstream line;
    line << std::setprecision(9) << r.implementation << ',' << r.variant << ',' << r.points << ',' << r.train_points
         << ',' << r.epochs << ',' << r.lr << ',' << r.median_ms << ',' << r.min_ms << ',' << r.max_ms << ','
         << r.repeats << ',' << us_per_epoch(r.epochs, r.median_ms) << ',' << gbps << ',' << r.copy_gbps << ','
         << (r.copy_gbps > 0 ? gbps / r.copy_gbps : 0.0) << ',' << (r.passed ? 1 : 0) << ',' << r.w << ',' << r.b;
    out << line.str() << "\n";
  }
}

nlohmann::json to_json(const SweepRow& r) {
  const double gbps = achieved_gbps(r.train_points, r.epochs, r.median_ms);
  return {{"implementation", r.implementation},
          {"variant", r.variant},
          {"points", r.points},
          {"train_points", r.train_points},
          {"epochs", r.epochs},
          {"lr", r.lr},
          {"training_ms", {{"median", r.median_ms}, {"min", r.min_ms}, {"max", r.max_ms}, {"repeats", r.repeats}}},
          {"us_per_epoch", us_per_epoch(r.epochs, r.median_ms)},
          {"gbps", gbps},
          {"copy_gbps", r.copy_gbps},
          {"copy_fraction", r.copy_gbps > 0 ? gbps / r.copy_gbps : 0.0},
          {"passed", r.passed},
          {"w", r.w},
          {"b", r.b}};
}

}  // namespace workbook::fused

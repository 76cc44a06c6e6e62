// sweep.h: the benchmark mode's plain-C++ parts: which sizes and variants, the learning rate per
// size, the bandwidth arithmetic, and the CSV / JSON rows that the plotting script reads.
//
//   auto sizes = workbook::fused::parse_sizes("500,5K,50M");         // 500, 5000, 50000000
//   auto variants = workbook::fused::parse_variants("all");          // 1 .. 7
//   double gbps = workbook::fused::achieved_gbps(train_points, epochs, ms);
//   workbook::fused::write_csv(file, rows);
//
// No CUDA here: the CPU tests check all of it on a machine without a GPU.
#pragma once

#include "fused_kernels.cuh"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace workbook::fused {

// The article's sizes, plus 100K (the size below which launch costs rule the epoch).
std::vector<std::int64_t> default_sweep_sizes();

// "500,5K,2M,100M": common/cli.h's sizes (K = 1e3, M = 1e6, G = 1e9), from 2 to 2e9 points.
// Throws UsageError naming --sizes.
std::vector<std::int64_t> parse_sizes(const std::string& text);

// "all" or a comma-separated list of 1..7 ("1,3,7"). Throws UsageError naming --variant.
std::vector<Variant> parse_variants(const std::string& text);

// The sweep keeps lr * E[x^2] at the article's value: X grows with N (X = i * 2e-6), and with
// lr 0.01 the recurrence diverges above about 10.7M points (X past 17). So lr is scaled by
// (5M / N)^2 above 5M points; epoch time does not depend on lr.
inline constexpr std::int64_t kArticlePoints = 5'000'000;
double sweep_lr(double base_lr, std::int64_t points);

// Variant 2 (a float atomic per element) is capped in the sweep: at 100M points it would take
// minutes. Sizes above this are left out of its rows.
inline constexpr std::int64_t kAtomicSweepCap = 5'000'000;

// Bytes one epoch must read: X and y of the training points, 4 bytes each.
double bytes_read_per_epoch(std::int64_t train_points);
// GB/s (1e9 bytes per second) of those reads over a run of `epochs` taking `ms`.
double achieved_gbps(std::int64_t train_points, int epochs, double ms);
// Microseconds per epoch.
double us_per_epoch(int epochs, double ms);

struct SweepRow {
  std::string implementation;  // "cuda" or "pytorch"
  std::string variant;         // "unfused", "last_block", ... or "eager", "graph", "compile", "cpu"
  std::int64_t points = 0;
  std::int64_t train_points = 0;
  int epochs = 0;
  double lr = 0.0;
  double median_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  int repeats = 0;
  double copy_gbps = 0.0;  // the ceiling measured by the same program on the same GPU
  bool passed = false;     // matched the reference before it was timed
  double w = 0.0;
  double b = 0.0;
};

// Columns derived from the measured ones: us_per_epoch, gbps and copy_fraction (gbps / copy_gbps).
std::string csv_header();
void write_csv(std::ostream& out, const std::vector<SweepRow>& rows);
nlohmann::json to_json(const SweepRow& row);

}  // namespace workbook::fused

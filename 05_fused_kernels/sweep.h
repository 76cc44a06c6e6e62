// sweep.h: fused_kernels_bench --sweep's plain-C++ parts: which sizes, and the row of each
// (size, variant) run, printed, written as CSV (the PyTorch script writes the same columns) and
// as JSON for the plotting script.
//
//   auto sizes = workbook::fused::parse_sizes("500,5K,50M");         // 500, 5000, 50000000
//   workbook::fused::write_csv(file, rows);
//
// No CUDA here: the CPU tests check all of it on a machine without a GPU.
#pragma once

#include "fused_kernels.h"
#include "stats.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace workbook::fused {

// The learning rate of each size: regression::scaled_lr (common/regression_problem.h).

// The article's sizes, plus 100K (the size below which launch costs rule the epoch).
std::vector<std::int64_t> default_sweep_sizes();

// "500,5K,2M,100M": common/cli.h's sizes (K = 1e3, M = 1e6, G = 1e9), from 2 to 2e9 points.
// Throws UsageError naming --sizes.
std::vector<std::int64_t> parse_sizes(const std::string& text);

// Variant 2 (a float atomic per element) is capped in the sweep: at 100M points it would take
// minutes. Sizes above this are left out of its rows.
inline constexpr std::int64_t kAtomicSweepCap = 5'000'000;

struct SweepRow {
  std::string implementation;  // "cuda" or "pytorch"
  std::string variant;         // "unfused", "last_block", ... or "eager", "graph", "compile", "cpu"
  std::int64_t points = 0;
  std::int64_t train_points = 0;
  int epochs = 0;
  double lr = 0.0;
  Stats training{};        // the timed runs of the whole loop, ms (count 0: not timed, its check failed)
  double copy_gbps = 0.0;  // the ceiling measured by the same program on the same GPU
  bool passed = false;     // matched the reference before it was timed
  double w = 0.0;
  double b = 0.0;
};

// Columns derived from the measured ones: us_per_epoch, gbps and copy_fraction (gbps / copy_gbps).
// The CSV has the time as four columns (median_ms, min_ms, max_ms, runs), the JSON as one
// training_ms {"median", "min", "max", "runs"}, left out of a row that was not timed.
std::string csv_header();
std::string table_header();                   // the printed table's heading line
std::string table_line(const SweepRow& row);  // one printed line
void write_csv(std::ostream& out, const std::vector<SweepRow>& rows);
nlohmann::json to_json(const SweepRow& row);

}  // namespace workbook::fused

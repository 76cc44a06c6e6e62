// bandwidth.cpp: sizes, repeats and break-even arithmetic for the transfer benchmark.
#include "bandwidth.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace workbook::transfer {

bool is_power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

std::vector<std::size_t> transfer_sizes(std::size_t min_bytes, std::size_t max_bytes) {
  if (!is_power_of_two(min_bytes) || !is_power_of_two(max_bytes) || min_bytes > max_bytes) {
    throw std::invalid_argument("transfer_sizes: need powers of two with min <= max, got " +
                                std::to_string(min_bytes) + " and " + std::to_string(max_bytes));
  }
  std::vector<std::size_t> sizes;
  for (std::size_t b = min_bytes; b <= max_bytes; b *= 2) sizes.push_back(b);
  return sizes;
}

workbook::Repeats repeats_for(std::size_t bytes, int base) {
  workbook::Repeats r;
  r.warmup = bytes < 64 * kMiB ? 2 : 1;
  const double scale = bytes <= 16 * kMiB ? 1.0 : static_cast<double>(16 * kMiB) / static_cast<double>(bytes);
  // A floor of up to 10 keeps the median of a large copy steady: its run-to-run spread is a few
  // hundredths of a percent, which is all that separates two programs at the link's limit.
  const int at_least = std::clamp(base, 3, 10);
  r.timed = std::max(at_least, static_cast<int>(std::lround(base * scale)));
  return r;
}

double ms_per_gib(double milliseconds, std::size_t bytes) {
  if (bytes == 0) throw std::invalid_argument("ms_per_gib: zero bytes");
  return milliseconds * static_cast<double>(kGiB) / static_cast<double>(bytes);
}

std::optional<long> break_even_copies(double pin_cost_ms, double pageable_copy_ms, double pinned_copy_ms) {
  if (pin_cost_ms <= 0.0) return 0L;
  const double saving = pageable_copy_ms - pinned_copy_ms;
  if (!(saving > 0.0)) return std::nullopt;
  return static_cast<long>(std::ceil(pin_cost_ms / saving));
}

}  // namespace workbook::transfer

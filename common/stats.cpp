// stats.cpp: median/min/max/mean of timing samples, and the GB/s arithmetic.
#include "stats.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace workbook {

Stats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  Stats s;
  s.count = n;
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  return s;
}

double median(std::vector<double> samples) { return summarize(std::move(samples)).median; }

double gigabytes_per_second(double bytes, double milliseconds) {
  if (milliseconds <= 0.0) throw std::invalid_argument("gigabytes_per_second: time must be positive");
  return bytes / (milliseconds * 1e-3) / 1e9;
}

}  // namespace workbook

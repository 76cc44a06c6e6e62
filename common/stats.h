// stats.h: summarize repeated timings as median, min and max (the median resists the odd slow
// repeat that an interrupt or a clock change produces; min and max show the spread).
#pragma once

#include <cstddef>
#include <vector>

namespace workbook {

struct Stats {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  std::size_t count = 0;
};

// Throws std::invalid_argument when `samples` is empty. For an even count the median is the mean
// of the two middle samples.
Stats summarize(std::vector<double> samples);

// The median alone (the mean of the two middle samples for an even count). Throws
// std::invalid_argument when `samples` is empty.
double median(std::vector<double> samples);

// Bytes moved per second, in GB/s (1e9 bytes), from a byte count and a time in milliseconds.
double gigabytes_per_second(double bytes, double milliseconds);

}  // namespace workbook

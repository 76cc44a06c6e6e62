// format.h: printf-style formatting into a std::string, for report lines with aligned columns.
//
//   out << workbook::format("%-10s %8.3f ms\n", name.c_str(), ms);
//   out << workbook::format_bytes(64 << 20);            // "64 MiB"
//   out << workbook::format_size(150754820096.0);      // "140.40 GiB"
//
// The compiler checks the arguments against the format, as it does for printf.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <string>

namespace workbook {

__attribute__((format(printf, 1, 2))) inline std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, pattern, args);
  va_end(args);
  std::string text(length > 0 ? static_cast<std::size_t>(length) : 0, '\0');
  if (length > 0) std::vsnprintf(text.data(), text.size() + 1, pattern, again);
  va_end(again);
  return text;
}

// "median of 5 runs", or "one run" where there is only one to take the median of.
inline std::string median_of(int count, const char* one, const char* many) {
  return count == 1 ? format("one %s", one) : format("median of %d %s", count, many);
}

// A byte count in the largest binary unit that divides it: "1 GiB", "64 MiB", "8 KiB", "12 B".
inline std::string format_bytes(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024, kMiB = kKiB << 10, kGiB = kMiB << 10;
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " B";
}

// Any byte count, rounded in the largest binary unit it reaches: "140.40 GiB" (two decimals),
// "50.0 MiB", "1.5 KiB" (one), "1000 B".
inline std::string format_size(double bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes >= kGiB) return format("%.2f GiB", bytes / kGiB);
  if (bytes >= kMiB) return format("%.1f MiB", bytes / kMiB);
  if (bytes >= kKiB) return format("%.1f KiB", bytes / kKiB);
  return format("%.0f B", bytes);
}

}  // namespace workbook

// compare.h: check a GPU result against its CPU twin with an absolute + relative tolerance.
//
//   const auto cmp = workbook::compare(gpu_out, cpu_ref, workbook::Tolerance{1e-6, 1e-5});
//   if (!cmp.ok()) std::cout << cmp.summary();      // first few mismatches and the worst error
//
// An element passes when |got - want| <= abs + rel * |want|. NaN never passes.
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace workbook {

struct Tolerance {
  double abs = 0.0;
  double rel = 0.0;
};

// |got - want| / |want|; |got| when want is 0 (an absolute error where no relative one exists).
inline double relative_error(double got, double want) {
  return want == 0.0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want);
}

inline bool within(double got, double want, Tolerance tol) {
  const double error = std::fabs(got - want);
  return error <= tol.abs + tol.rel * std::fabs(want);  // false for NaN
}

struct Mismatch {
  std::size_t index;
  double got;
  double want;
};

struct Comparison {
  std::size_t checked = 0;
  std::size_t mismatches = 0;
  double worst_error = 0.0;  // largest |got - want| (infinite when a NaN was seen)
  std::size_t worst_index = 0;
  std::vector<Mismatch> first;  // the first few mismatches, in index order

  bool ok() const { return mismatches == 0; }
  std::string summary() const {
    std::ostringstream s;
    s << mismatches << " of " << checked << " elements outside tolerance; worst |error| " << worst_error
      << " at index " << worst_index << "\n";
    for (const Mismatch& m : first) s << "  [" << m.index << "] got " << m.got << ", want " << m.want << "\n";
    return s.str();
  }
};

template <class Got, class Want>
Comparison compare(const Got& got, const Want& want, Tolerance tol, std::size_t max_listed = 5) {
  Comparison c;
  if (std::size(got) != std::size(want)) {  // a length mismatch fails before any element is read
    c.mismatches = 1;
    c.worst_error = INFINITY;
    return c;
  }
  c.checked = std::size(got);
  for (std::size_t i = 0; i < c.checked; ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    const double error = std::isnan(g) || std::isnan(w) ? INFINITY : std::fabs(g - w);
    if (error > c.worst_error) {
      c.worst_error = error;
      c.worst_index = i;
    }
    if (!within(g, w, tol)) {
      ++c.mismatches;
      if (c.first.size() < max_listed) c.first.push_back({i, g, w});
    }
  }
  return c;
}

}  // namespace workbook

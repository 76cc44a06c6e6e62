// regression_support.h: the check chapters 04, 05 and 06 share in their tests: a trained result
// matches the float64 reference within 04's tolerances, in w, b, the test MSE and every epoch's loss.
#pragma once

#include "regression_problem.h"

#include <catch2/catch_test_macros.hpp>
#include <nlohmann/json.hpp>

namespace workbook::testing {

inline void require_matches_reference(const regression::TrainingResult& got, const regression::TrainingResult& want) {
  REQUIRE_FALSE(got.diverged_at);
  REQUIRE_FALSE(want.diverged_at);
  const regression::Check c = regression::check_against(got, want);
  CAPTURE(got.w, want.w, got.b, want.b, c.failure);
  CHECK(c.ok);
}

// A measured time as every JSON writes it, {"median", "min", "max", "runs"} (common/table.h
// timing()): not negative, ordered, from `runs` runs.
inline void check_timing(const nlohmann::json& t, std::size_t runs) {
  CAPTURE(t.dump());
  REQUIRE(t.is_object());
  CHECK(t.size() == 4);
  CHECK(t["runs"] == runs);
  CHECK(t["min"].get<double>() >= 0.0);
  CHECK(t["min"].get<double>() <= t["median"].get<double>());
  CHECK(t["median"].get<double>() <= t["max"].get<double>());
}

}  // namespace workbook::testing

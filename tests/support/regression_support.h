// regression_support.h: the check chapters 04, 05 and 06 share in their tests: a trained result
// matches the float64 reference within 04's tolerances, in w, b, the test MSE and every epoch's loss.
#pragma once

#include "regression_problem.h"

#include <catch2/catch_test_macros.hpp>

namespace workbook::testing {

inline void require_matches_reference(const regression::TrainingResult& got, const regression::TrainingResult& want) {
  REQUIRE_FALSE(got.diverged_at);
  REQUIRE_FALSE(want.diverged_at);
  const regression::Check c = regression::check_against(got, want);
  CAPTURE(got.w, want.w, got.b, want.b, c.failure);
  CHECK(c.ok);
}

}  // namespace workbook::testing

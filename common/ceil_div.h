// ceil_div.h: how many groups of `per` cover `count` things, rounded up: blocks of a launch,
// batches of an epoch. Plain C++, no CUDA.
//
//   const std::int64_t blocks = workbook::ceil_div(n, threads_per_block);
#pragma once

#include <cstdint>

namespace workbook {

constexpr std::int64_t ceil_div(std::int64_t count, std::int64_t per) { return (count + per - 1) / per; }

}  // namespace workbook

// bandwidth.h: the arithmetic of the bench's sweep and pinning cost (pure functions, testable
// without a GPU; bench_transfer.cpp uses them, the lesson does not).
//
//   for (std::size_t bytes : transfer::transfer_sizes(4 << 10, 64 << 20)) ...  // 4 KiB, 8 KiB, ...
//   workbook::Repeats r = transfer::repeats_for(bytes, 20);                      // fewer for big copies
//   auto copies = transfer::break_even_copies(pin_ms, pageable_ms, pinned_ms);  // when pinning pays
#pragma once

#include "event_timer.h"
#include "host_memory.h"  // kKiB, kMiB, kGiB

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace workbook::transfer {

bool is_power_of_two(std::size_t n);

// min_bytes, 2*min_bytes, ... up to max_bytes (both powers of two, 0 < min <= max); throws
// std::invalid_argument otherwise.
std::vector<std::size_t> transfer_sizes(std::size_t min_bytes, std::size_t max_bytes);

// Timed repeats for one copy size: `base` up to 16 MiB, then fewer so that each size costs about
// the same time, but never fewer than `base` clamped to [3, 10] (a median needs three, and ten
// keep it steady). Warm-up: 2 below 64 MiB, else 1.
workbook::Repeats repeats_for(std::size_t bytes, int base);

// Milliseconds per GiB, to compare the cost of allocations of different sizes.
double ms_per_gib(double milliseconds, std::size_t bytes);

// How many copies of one buffer before page-locking it pays for itself: the smallest n with
// n * (pageable_copy_ms - pinned_copy_ms) >= pin_cost_ms. std::nullopt when pinned copies are no
// faster (pinning never pays); 0 when pinning costs nothing.
std::optional<long> break_even_copies(double pin_cost_ms, double pageable_copy_ms, double pinned_copy_ms);

}  // namespace workbook::transfer

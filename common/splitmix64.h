// splitmix64.h: splitmix64 (Steele, Lea and Flood), the small generator the chapters seed and
// shuffle with: 04's batch order (restated in its Python twin), 02's test patterns and the seeds
// of its xoshiro256+. Plain C++, no CUDA.
//
//   std::uint64_t state = seed;
//   const std::uint64_t a = workbook::splitmix64(state);   // the next number; state advances
//   const std::uint64_t h = workbook::splitmix64_of(i);    // a well-mixed hash of a counter
#pragma once

#include <cstdint>

namespace workbook {

// The next number, advancing `state` by the golden-ratio gamma.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The number splitmix64 gives from state x: a hash of x (fine for test patterns, not statistics).
inline std::uint64_t splitmix64_of(std::uint64_t x) { return splitmix64(x); }

}  // namespace workbook

// on_chip_room.h: how much of a training set a GPU can keep on chip, in registers and shared
// memory, for every epoch of one persistent launch (chapter 05's variant 8, chapter 06's on-chip
// training across GPUs). Host side; the device half is on_chip_slice.cuh.
//
//   const OnChipRoom room = probe_on_chip_room(reinterpret_cast<const void*>(kernel));  // this GPU, that kernel
//   if (!room.fits(train_points)) std::cout << room.does_not_fit(train_points) << "\n";
//   //   does not fit on chip: 64.0 MB needed, 48.0 MB available
//   kernel<<<room.capacity.blocks, kOnChipThreads, room.shared_bytes_for(train_points)>>>(...);
//
// The room is a function of the GPU's properties: the SMs, how many blocks of the kernel fit on
// one (the occupancy API), and the shared memory a block may opt into. Each of the blocks keeps
// kOnChipThreads x kOnChipRegisterFloat4 float4s of x and of y in registers and the rest of its
// slice in dynamic shared memory. Bytes count x and y: 8 per training point.
#pragma once

#include <cstdint>
#include <string>

namespace workbook::fused {

inline constexpr int kOnChipThreads = 512;       // threads per block, one block per SM
inline constexpr int kOnChipRegisterFloat4 = 8;  // float4s of x and of y each thread keeps in registers

struct OnChipCapacity {
  int blocks = 0;                   // co-resident blocks of the cooperative launch (0: none)
  std::int64_t register_bytes = 0;  // x and y held in registers, the whole grid
  std::int64_t shared_bytes = 0;    // x and y held in shared memory, the whole grid
  std::int64_t bytes() const { return register_bytes + shared_bytes; }
  std::int64_t points() const { return bytes() / 8; }
};

struct OnChipRoom {
  OnChipCapacity capacity;
  std::int64_t shared_max = 0;  // dynamic shared memory one block may take (whole 32-byte x,y pairs)
  std::string unavailable;      // why this GPU has no room at any size (empty when it has)

  bool available() const { return capacity.blocks > 0; }
  // The dynamic shared memory each block needs for n training points: its slice of float4 pairs
  // beyond what its registers hold.
  std::int64_t shared_bytes_for(std::int64_t n) const;
  bool fits(std::int64_t n) const { return available() && shared_bytes_for(n) <= shared_max; }
  // "does not fit on chip: N MB needed, M MB available" (or `unavailable`).
  std::string does_not_fit(std::int64_t n) const;
};

// The arithmetic alone (CPU-tested): `per_sm` blocks of the kernel on each of `multiprocessors`
// SMs, each with `shared_max` bytes of dynamic shared memory.
OnChipRoom on_chip_room_of(int per_sm, int multiprocessors, std::int64_t shared_max);

// The current GPU's room for `kernel` (launched with kOnChipThreads threads): sets the kernel's
// dynamic shared memory limit to the most a block may opt into, then asks the occupancy API.
OnChipRoom probe_on_chip_room(const void* kernel);

}  // namespace workbook::fused

// on_chip_room.cpp: the room's arithmetic, and its probe on the current GPU (on_chip_room.h).
#include "on_chip_room.h"

#include "cuda_check.h"
#include "format.h"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace workbook::fused {

std::int64_t OnChipRoom::shared_bytes_for(std::int64_t n) const {
  if (capacity.blocks == 0) return 0;
  const std::int64_t float4s = n / 4;  // the last n % 4 points live in registers of block 0
  const std::int64_t per_block = (float4s + capacity.blocks - 1) / capacity.blocks;
  return std::max<std::int64_t>(0, per_block - std::int64_t{kOnChipThreads} * kOnChipRegisterFloat4) * 32;
}

std::string OnChipRoom::does_not_fit(std::int64_t n) const {
  if (!available()) return unavailable;
  return format("does not fit on chip: %.1f MB needed, %.1f MB available", 8.0 * static_cast<double>(n) / 1e6,
                static_cast<double>(capacity.bytes()) / 1e6);
}

OnChipRoom on_chip_room_of(int per_sm, int multiprocessors, std::int64_t shared_max) {
  OnChipRoom room;
  room.shared_max = shared_max;
  room.capacity.blocks = per_sm * multiprocessors;
  room.capacity.register_bytes =
      static_cast<std::int64_t>(room.capacity.blocks) * kOnChipThreads * kOnChipRegisterFloat4 * 32;
  room.capacity.shared_bytes = static_cast<std::int64_t>(room.capacity.blocks) * shared_max;
  return room;
}

OnChipRoom probe_on_chip_room(const void* kernel) {
  int device = 0, cooperative = 0, shared_optin = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  OnChipRoom none;
  if (cooperative == 0) {
    none.unavailable = "needs cooperative launch (cudaDevAttrCooperativeLaunch), which this GPU lacks";
    return none;
  }
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  // Whole float4 pairs (32 bytes: one x and one y) beside the kernel's static shared memory.
  const std::int64_t shared_max = (shared_optin - static_cast<std::int64_t>(attributes.sharedSizeBytes)) / 32 * 32;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_max)));
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kOnChipThreads,
                                                           static_cast<std::size_t>(shared_max)));
  if (per_sm == 0) {
    none.unavailable = format("no block of %d threads with %lld KiB of shared memory fits on an SM", kOnChipThreads,
                              static_cast<long long>(shared_max / 1024));
    return none;
  }
  return on_chip_room_of(per_sm, multiprocessors, shared_max);
}

}  // namespace workbook::fused

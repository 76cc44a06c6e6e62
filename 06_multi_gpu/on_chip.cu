// on_chip.cu: chapter 06's fifth part: training that lives on the chips of several GPUs.
// Chapter 05's variant 8 kept the whole training set in one GPU's registers and shared memory
// and ran every epoch in one launch; its room (about 6M training points on an H100 or H200) is
// the end of that road on one GPU. Here each GPU keeps its SHARD on chip the same way, and the
// three sums meet inside the persistent kernel: per epoch a grid barrier on each GPU, its blocks'
// partials added, one block publishing them over NVLink into every peer's mailbox, and every
// block waiting for the peers' sums and adding all ranks' in rank order. Every block of every
// GPU steps on the same bits. Two GPUs hold twice the room: a set too large for one chip fits on
// two, and its epoch no longer reads DRAM at all, a step larger than the GPU count.
//
//   OnChipEpochs epochs(replica.view(), mailbox);   // OnChipDoesNotFit above the room
//   epochs.enqueue();                               // one cooperative launch: every epoch
#include "by_hand.h"

#include "cuda_check.h"
#include "on_chip_slice.cuh"
#include "one_shot_exchange.cuh"

#include <cooperative_groups.h>

#include <string>

namespace workbook::multi_gpu {
namespace {

namespace cg = cooperative_groups;
using fused::block_sums;
using fused::kOnChipThreads;
using fused::OnChipSlice;
using fused::Sums;

// Every epoch of this GPU's shard in one cooperative launch (all blocks resident at once).
// partials: 2 rows by epoch parity, each 4 columns of `blocks`: the three sums, and a flag that
// the block's last wait gave up. A block that gave up still reaches the next grid barrier; after
// it every block reads every flag, so all blocks stop at the same epoch and none waits at a
// barrier for a block that left.
__global__ void __launch_bounds__(kOnChipThreads, 1)
    on_chip_epochs_kernel(const float* __restrict__ x, const float* __restrict__ y, std::int64_t n, float* params,
                          float* losses, float* partials, int epochs, float lr, float inv_n, float two_inv_n,
                          OneShotView mailbox) {
  cg::grid_group grid = cg::this_grid();
  extern __shared__ float4 slice_memory[];
  __shared__ float new_wb[2];
  __shared__ bool gave_up;
  const int blocks = static_cast<int>(gridDim.x);
  const int t = static_cast<int>(threadIdx.x);
  OnChipSlice slice;
  slice.load(x, y, n, slice_memory);  // the only reads of the shard from memory in this launch
  const unsigned first = one_shot_next(mailbox);  // exchange number of epoch 0; 0: an earlier wait gave up
  if (t == 0) gave_up = first == 0;
  __syncthreads();

  float w = params[0];
  float b = params[1];
  bool stopped = false;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    // (1) This block's sums of this GPU's shard, from registers and shared memory.
    const Sums s = block_sums<kOnChipThreads>(slice.sums(w, b));
    float* row = partials + (epoch & 1) * 4 * blocks;
    if (t == 0) {
      row[blockIdx.x] = s.rr;
      row[blocks + blockIdx.x] = s.rx;
      row[2 * blocks + blockIdx.x] = s.r;
      row[3 * blocks + blockIdx.x] = gave_up ? 1.0f : 0.0f;
    }
    grid.sync();  // every block's row is written and visible to every block of this GPU
    // (2) This GPU's sums: every block adds the rows in the same order, so holds the same bits.
    Sums p{0.0f, 0.0f, 0.0f};
    int stop = 0;
    for (int j = t; j < blocks; j += kOnChipThreads) {  // __ldcg: written by other SMs, read at L2
      p.rr += __ldcg(row + j);
      p.rx += __ldcg(row + blocks + j);
      p.r += __ldcg(row + 2 * blocks + j);
      stop |= __ldcg(row + 3 * blocks + j) != 0.0f;
    }
    if (__syncthreads_or(stop)) {  // the same answer in every block: the flags of one row
      stopped = true;
      break;
    }
    const Sums local = block_sums<kOnChipThreads>(p);  // valid in thread 0
    // (3) The exchange, by warp 0 of each block: block 0 publishes, every block gathers.
    if (t < 32) {
      const float mine[3] = {__shfl_sync(kFullWarp, local.rr, 0), __shfl_sync(kFullWarp, local.rx, 0),
                             __shfl_sync(kFullWarp, local.r, 0)};
      const unsigned number = first + static_cast<unsigned>(epoch);
      if (blockIdx.x == 0) one_shot_publish(mailbox, number, mine);
      float total[3];
      const bool got = one_shot_gather(mailbox, number, mine, total);
      // (4) The step on every rank's sums: the same float operations everywhere.
      if (t == 0) {
        if (got) {
          if (blockIdx.x == 0) losses[epoch] = total[0] * inv_n;
          new_wb[0] = w - lr * (total[1] * two_inv_n);
          new_wb[1] = b - lr * (total[2] * two_inv_n);
        } else {
          gave_up = true;  // said in the next row; every block stops after the next barrier
          new_wb[0] = w;
          new_wb[1] = b;
        }
      }
    }
    __syncthreads();
    w = new_wb[0];
    b = new_wb[1];
  }
  if (blockIdx.x == 0 && t == 0) {
    params[0] = w;
    params[1] = b;
    if (!stopped && epochs > 0) one_shot_done(mailbox, first + static_cast<unsigned>(epochs) - 1);
  }
}

}  // namespace

fused::OnChipRoom on_chip_room() {
  return fused::probe_on_chip_room(reinterpret_cast<const void*>(on_chip_epochs_kernel));
}

OnChipEpochs::OnChipEpochs(const ReplicaView& replica, const OneShotMailbox& box) : replica_(replica), box_(box) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  room_ = on_chip_room();  // also lets the kernel take that much shared memory on this GPU
  if (!room_.fits(replica.n)) throw OnChipDoesNotFit("GPU " + std::to_string(device) + "'s shard " + room_.does_not_fit(replica.n));
  partials_ = DeviceBuffer<float>(2 * 4 * static_cast<std::size_t>(room_.capacity.blocks));
  CUDA_CHECK(cudaMemsetAsync(partials_.data(), 0, partials_.bytes(), replica.stream));
}

void OnChipEpochs::enqueue() {
  const float* x = replica_.x;
  const float* y = replica_.y;
  std::int64_t n = replica_.n;
  float* params = replica_.params;
  float* losses = replica_.losses;
  float* partials = partials_.data();
  int epochs = replica_.epochs;
  float lr = replica_.lr, inv_n = replica_.inv_n, two_inv_n = replica_.two_inv_n;
  OneShotView view = box_.view();
  void* args[] = {&x, &y, &n, &params, &losses, &partials, &epochs, &lr, &inv_n, &two_inv_n, &view};
  // A cooperative launch refuses (cudaErrorCooperativeLaunchTooLarge) rather than deadlock when
  // the blocks cannot all be resident at once.
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(on_chip_epochs_kernel),
                                         dim3(room_.capacity.blocks), dim3(kOnChipThreads), args,
                                         static_cast<std::size_t>(room_.shared_bytes_for(n)), replica_.stream));
  CUDA_CHECK_LAUNCH();
}

}  // namespace workbook::multi_gpu

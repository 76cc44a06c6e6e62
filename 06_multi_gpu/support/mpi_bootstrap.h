// mpi_bootstrap.h: the `mpirun -np N multi_gpu ddp` path. MPI only starts the ranks and
// broadcasts NCCL's unique id from rank 0; all GPU traffic is NCCL's. Each rank drives the GPU of
// its node-local rank, so the same command works across nodes (e.g. mpirun -np 8 -H a:4,b:4).
//
// Compiled with and without MPI: without it, launched_by_mpi() still recognizes mpirun's
// environment, so that the program can refuse with a reason instead of starting N launchers.
#pragma once

#include "sharding.h"

#include <cstddef>

namespace workbook::multi_gpu {

bool mpi_built_in();

// OpenMPI, MPICH/Hydra or PMIx set these in every process they start.
bool launched_by_mpi(EnvLookup getenv_fn);

// MPI_Init on construction, MPI_Finalize on destruction (throws std::runtime_error without MPI).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The node-local rank: the launcher's variable if set, else MPI_Comm_split_type(SHARED).
  int local_rank() const { return local_rank_; }
  void broadcast_from_root(void* bytes, std::size_t count) const;
  // MPI_Abort: mpirun stops every rank and names this one. Never returns.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace workbook::multi_gpu

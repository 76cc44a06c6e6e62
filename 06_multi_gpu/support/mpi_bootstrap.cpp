// mpi_bootstrap.cpp: MPI_Init, the node-local rank, the id broadcast, MPI_Abort (WORKBOOK_HAVE_MPI),
// or a refusal with the reason (without MPI).
#include "mpi_bootstrap.h"

#include <cstdlib>
#include <stdexcept>

#ifdef WORKBOOK_HAVE_MPI
#include <mpi.h>
#endif

namespace workbook::multi_gpu {

bool launched_by_mpi(EnvLookup getenv_fn) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (getenv_fn(name) != nullptr) return true;
  }
  return false;
}

#ifdef WORKBOOK_HAVE_MPI

bool mpi_built_in() { return true; }

namespace {
void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed with MPI error " + std::to_string(code));
}
}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  check_mpi(MPI_Init(argc, argv), "MPI_Init");
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  if (const auto local = local_rank_from_environment(&process_environment)) {
    local_rank_ = *local;
  } else {
    // The ranks that share this node's memory: their order is the node-local rank.
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank (node)");
    MPI_Comm_free(&node);
  }
}

MpiSession::~MpiSession() { MPI_Finalize(); }

void MpiSession::broadcast_from_root(void* bytes, std::size_t count) const {
  check_mpi(MPI_Bcast(bytes, static_cast<int>(count), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

void MpiSession::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this satisfies [[noreturn]] if it ever did
}

#else

bool mpi_built_in() { return false; }

MpiSession::MpiSession(int*, char***) {
  throw std::runtime_error(
      "this build of multi_gpu has no MPI (install libopenmpi-dev and reconfigure); use the built-in launcher: "
      "multi_gpu ddp --nproc N");
}

MpiSession::~MpiSession() = default;

void MpiSession::broadcast_from_root(void*, std::size_t) const {}

void MpiSession::abort(int) const { std::abort(); }

#endif

}  // namespace workbook::multi_gpu

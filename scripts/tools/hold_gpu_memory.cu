// hold_gpu_memory.cu: take all but LEAVE_MIB of a GPU's free memory, and keep it until stopped
// (SIGTERM or SIGINT), so that the chapters run as on a smaller GPU. scripts/small-gpu.sh builds it.
//
//   hold_gpu_memory LEAVE_MIB [DEVICE]
//
// Prints one line once the memory is held ("holding H MiB of device D; F MiB free"), then waits.
// Exit 0 when stopped; 1 when a CUDA call fails or less than LEAVE_MIB is free to begin with;
// 2 for bad usage.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

volatile std::sig_atomic_t stop_asked = 0;
void ask_stop(int) { stop_asked = 1; }

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "error: hold_gpu_memory: %s: %s\n", what, cudaGetErrorString(status));
  return false;
}

bool parse_count(const char* text, long& value) {
  char* end = nullptr;
  value = std::strtol(text, &end, 10);
  return *text != '\0' && *end == '\0' && value >= 0 && value < (1L << 30);
}

}  // namespace

int main(int argc, char** argv) {
  long leave_mib = 0, device = 0;
  if (argc < 2 || argc > 3 || !parse_count(argv[1], leave_mib) || (argc == 3 && !parse_count(argv[2], device))) {
    std::fprintf(stderr, "usage: hold_gpu_memory LEAVE_MIB [DEVICE]\n");
    return 2;
  }
  std::signal(SIGTERM, ask_stop);
  std::signal(SIGINT, ask_stop);
  if (!ok(cudaSetDevice(static_cast<int>(device)), "cudaSetDevice") || !ok(cudaFree(nullptr), "starting the context"))
    return 1;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (!ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo")) return 1;
  const std::size_t mib = std::size_t{1} << 20, leave = static_cast<std::size_t>(leave_mib) * mib;
  if (free_bytes < leave) {
    std::fprintf(stderr, "error: hold_gpu_memory: only %zu MiB free, less than the %ld MiB to leave\n",
                 free_bytes / mib, leave_mib);
    return 1;
  }
  // One allocation of the rest; the driver keeps some memory back, so step down until one fits.
  void* held = nullptr;
  std::size_t want = (free_bytes - leave) / mib * mib;
  while (want > 0 && cudaMalloc(&held, want) != cudaSuccess) {
    (void)cudaGetLastError();  // an out-of-memory refusal is not sticky
    want -= std::min(want, 64 * mib);
  }
  if (!ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo")) return 1;
  std::printf("holding %zu MiB of device %ld; %zu MiB free\n", want / mib, device, free_bytes / mib);
  std::fflush(stdout);
  while (!stop_asked) pause();
  return ok(cudaFree(held), "cudaFree") ? 0 : 1;
}

// workload.cpp: chapter 03's workload (see workload.h): flags, buffers and input, check helpers.
#include "workload.h"

#include "cli.h"
#include "cuda_check.h"
#include "gpu_memory.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace workbook::streams_events {

void add_workload_options(CLI::App& app, WorkloadOptions& o) {
  app.add_option("--chunks", o.chunks, "chunks in the batch (default 64; --quick 4)");
  workbook::add_size_option(app, "--chunk-elements", o.chunk_elements,
                            "floats per chunk, e.g. 1048576 (4 MiB) or 1M (1,000,000) (default 1048576; --quick 65536)");
  app.add_option("--iterations", o.iterations,
                 "multiply-adds per element in the compute stage; 0 calibrates it so that compute takes as long "
                 "as both copies running at once (default 0; --quick 64)");
}

void finish_workload_options(const CLI::App& app, bool quick, WorkloadOptions& o) {
  if (quick) {  // small sizes, unless the flag was given explicitly
    if (app.count("--chunks") == 0) o.chunks = 4;
    if (app.count("--chunk-elements") == 0) o.chunk_elements = 1 << 16;
    if (app.count("--iterations") == 0) o.iterations = 64;
  }
  workbook::require_at_least("--chunks", o.chunks, 1);
  workbook::require_at_most("--chunks", o.chunks, 4096);
  workbook::require_at_least("--chunk-elements", o.chunk_elements, 1LL);
  workbook::require_at_most("--chunk-elements", o.chunk_elements, 1LL << 28);
  workbook::require_at_most("--chunks x --chunk-elements", o.chunks * o.chunk_elements, 1LL << 30);
  workbook::require_at_least("--iterations", o.iterations, 0);
  workbook::require_at_most("--iterations", o.iterations, 1000000);
}

namespace {

std::size_t checked_total(const WorkloadOptions& o) {
  const std::size_t n = static_cast<std::size_t>(o.chunks) * static_cast<std::size_t>(o.chunk_elements);
  workbook::require_gpu_memory(
      "--chunks " + std::to_string(o.chunks) + " x --chunk-elements " + std::to_string(o.chunk_elements),
      workbook::ByteCount().add(static_cast<std::int64_t>(n), sizeof(float), 2));
  return n;
}

}  // namespace

BatchBuffers::BatchBuffers(const WorkloadOptions& o)
    : host_in(checked_total(o)),
      host_out(host_in.size()),
      dev_in(host_in.size()),
      dev_out(host_in.size()),
      batch{host_in.data(), host_out.data(), dev_in.data(), dev_out.data(),
            static_cast<std::size_t>(o.chunk_elements), o.chunks, o.iterations} {
  fill_input(host_in.data(), host_in.size());
}

void fill_input(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u + 0x9e3779b9u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    x[i] = static_cast<float>(h >> 8) / 8388608.0f - 1.0f;
  }
}

void poison(const Batch& b) {
  const std::size_t bytes = b.total_elements() * sizeof(float);
  CUDA_CHECK(cudaMemset(b.dev_in, 0xFF, bytes));
  CUDA_CHECK(cudaMemset(b.dev_out, 0xFF, bytes));
  std::memset(b.host_out, 0xFF, bytes);
  CUDA_CHECK(cudaDeviceSynchronize());
}

std::size_t count_differences(const float* got, const float* want, std::size_t n) {
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
  return differ;
}

}  // namespace workbook::streams_events

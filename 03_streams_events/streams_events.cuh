// streams_events.cuh: the two kernels of chapter 03 and their CPU twins, callable from plain C++.
//
//   streams_events::launch_transform(d_in, d_out, n, iterations, stream);   // the "compute" stage
//   float want = streams_events::transform_cpu(x, iterations);              // its reference
//   streams_events::launch_spin(2'000'000, nullptr, stream);                // keep the GPU busy 2 ms
//
// The kernels themselves (__global__) stay inside streams_events.cu so that g++ can include this.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace streams_events {

// The compute stage: y <- decay * y + x, `iterations` times, starting from y = x. Each step is one
// fused multiply-add (2 FLOP), written as fmaf on both sides so that the GPU and CPU results agree
// bit for bit. Its cost grows linearly with `iterations`, which is how the program makes compute
// take as long as a copy.
inline constexpr float kDecay = 0.999f;

float transform_cpu(float x, int iterations);
void transform_cpu(const float* in, float* out, std::size_t n, int iterations);
void launch_transform(const float* in, float* out, std::size_t n, int iterations, cudaStream_t stream);

// One thread that spins on the GPU's nanosecond clock for `nanoseconds`, then (when `elapsed_out`
// is not null) writes how long it spun. It stands in for "a long kernel": its duration is known
// in advance, it occupies one SM slot only, and it behaves the same under compute-sanitizer.
void launch_spin(long long nanoseconds, unsigned long long* elapsed_out, cudaStream_t stream);

}  // namespace streams_events

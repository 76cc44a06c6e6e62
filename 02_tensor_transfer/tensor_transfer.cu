// tensor_transfer.cu: the chapter's GPU code: random normals made on the device (cuRAND), the
// same made on the host, and a spin kernel that keeps a stream busy for a known time.
#include "tensor_transfer.cuh"

#include "cuda_check.h"
#include "globaltimer.cuh"
#include "nvtx.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace transfer {
namespace {

__global__ void spin_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = workbook::global_timer_ns();
  while (workbook::global_timer_ns() - start < nanoseconds) __nanosleep(1000);  // sleep: leave the SM quiet
}

// xoshiro256+ (Blackman and Vigna): fast; its lowest bits are weak, and fill_normal_cpu skips them.
struct Xoshiro256Plus {
  std::uint64_t s[4];
  explicit Xoshiro256Plus(std::uint64_t seed) {
    for (std::uint64_t& word : s) {  // seed the state with splitmix64, as the authors advise
      seed += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      word = z ^ (z >> 31);
    }
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = s[0] + s[3];
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

}  // namespace

DeviceNormalGenerator::DeviceNormalGenerator(std::uint64_t seed, cudaStream_t stream)
    : generator_(workbook::RngLocation::kDevice, seed, stream), stream_(stream), pair_(2) {}

void DeviceNormalGenerator::fill(float* device_data, std::size_t n) {
  const std::size_t even = n - n % 2;
  if (even > 0) generator_.normal(device_data, even, 0.0f, 1.0f);
  if (n % 2 == 1) {
    generator_.normal(pair_.data(), 2, 0.0f, 1.0f);
    CUDA_CHECK(cudaMemcpyAsync(device_data + even, pair_.data(), sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }
}

void fill_normal_cpu(float* host_data, std::size_t n, std::uint64_t seed) {
  // Box-Muller in float: one 64-bit draw gives two 24-bit uniforms, and they give two normals.
  // (24 bits cap the tails at about 5.8 sigma, which is more than a float32 randn needs here.)
  Xoshiro256Plus rng(seed);
  constexpr float kTwoPi = 6.28318530718f;
  for (std::size_t i = 0; i < n; i += 2) {
    const std::uint64_t bits = rng.next();
    const float u1 = (static_cast<float>(bits >> 40) + 1.0f) * 0x1.0p-24f;           // (0, 1]: log stays finite
    const float u2 = static_cast<float>((bits >> 16) & 0xFFFFFFu) * 0x1.0p-24f;      // [0, 1)
    const float radius = std::sqrt(-2.0f * std::log(u1));
    host_data[i] = radius * std::cos(kTwoPi * u2);
    if (i + 1 < n) host_data[i + 1] = radius * std::sin(kTwoPi * u2);
  }
}

MeanStd mean_std_cpu(const float* host_data, std::size_t n) {
  MeanStd r;
  if (n == 0) return r;
  double sum = 0.0, sum_sq = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += host_data[i];
    sum_sq += static_cast<double>(host_data[i]) * host_data[i];
  }
  r.mean = sum / static_cast<double>(n);
  r.std = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - r.mean * r.mean));
  return r;
}

void spin_on_gpu(double milliseconds, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(milliseconds * 1e6));
  CUDA_CHECK_LAUNCH();
}

Tensor randn(const Shape& shape, Device device, std::uint64_t seed) {
  workbook::NvtxRange range(device.is_cpu() ? "randn on host" : "randn on device");
  Tensor t = Tensor::empty(shape, DType::kFloat32, device);
  const auto n = static_cast<std::size_t>(t.numel());
  if (device.is_cpu()) {
    fill_normal_cpu(static_cast<float*>(t.data_ptr()), n, seed);
  } else {
    DeviceGuard on(device.index);
    DeviceNormalGenerator generator(seed, /*stream=*/nullptr);
    generator.fill(static_cast<float*>(t.data_ptr()), n);
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  return t;
}

}  // namespace transfer

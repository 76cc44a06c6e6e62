// tensor.cpp: metadata on the host, elements where the device says, copies between them.
#include "tensor.h"

#include "cuda_check.h"
#include "device_buffer.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace workbook::transfer {

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kInt32: return 4;
    case DType::kUInt8: return 1;
  }
  throw std::invalid_argument("element_size: unknown dtype");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
  }
  return "unknown";
}

Device Device::cuda(int gpu) {
  if (gpu < 0) throw std::invalid_argument("cuda device index must be >= 0, got " + std::to_string(gpu));
  return Device{gpu};
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  const std::string prefix = "cuda:";
  const std::string digits = text.substr(std::min(text.size(), prefix.size()));
  const bool well_formed = text.compare(0, prefix.size(), prefix) == 0 && !digits.empty() &&
                           digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
  if (!well_formed) {
    throw std::invalid_argument("expected a device like 'cpu', 'cuda' or 'cuda:1', got '" + text + "'");
  }
  return Device::cuda(std::stoi(digits));
}

std::int64_t numel_of(const Shape& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_str(shape));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) {
      throw std::invalid_argument("shape " + shape_str(shape) + " has too many elements");
    }
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// One allocation: host memory of some kind, or device memory on one GPU.
struct Tensor::Storage {
  HostBuffer host;
  workbook::DeviceBuffer<std::byte> gpu;

  void* data() { return gpu.data() != nullptr ? static_cast<void*>(gpu.data()) : host.data(); }
};

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, Device device)
    : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype), device_(device) {}

Tensor Tensor::empty(Shape shape, DType dtype, Device device, HostMemory host_memory) {
  if (host_memory == HostMemory::kRegistered) {
    throw std::invalid_argument("Tensor::empty: host tensors are pageable or pinned");
  }
  const std::size_t bytes = static_cast<std::size_t>(numel_of(shape)) * element_size(dtype);
  auto storage = std::make_shared<Storage>();
  if (device.is_cpu()) {
    storage->host = HostBuffer(bytes, host_memory);
  } else {
    DeviceGuard on(device.index);  // cudaMalloc allocates on the current device
    storage->gpu = workbook::DeviceBuffer<std::byte>(bytes);
  }
  return Tensor(std::move(storage), std::move(shape), dtype, device);
}

bool Tensor::is_pinned() const {
  return device_.is_cpu() && storage_->host.kind() != HostMemory::kPageable;
}

void* Tensor::data_ptr() { return storage_->data(); }
const void* Tensor::data_ptr() const { return storage_->data(); }

Tensor Tensor::to(Device target) const {
  if (target == device_) return *this;  // shares the storage, as PyTorch's .to() does
  Tensor result = empty(shape_, dtype_, target);
  result.copy_(*this);
  return result;
}

Tensor Tensor::pin_memory() const {
  if (!device_.is_cpu()) throw std::invalid_argument("pin_memory: only host tensors can be pinned");
  Tensor result = empty(shape_, dtype_, device_, HostMemory::kPinned);
  result.copy_(*this);
  return result;
}

void Tensor::copy_(const Tensor& src) {
  if (src.dtype_ != dtype_ || src.numel() != numel()) {
    throw std::invalid_argument("copy_: shape " + shape_str(src.shape_) + " " + dtype_name(src.dtype_) +
                                " does not fit into " + shape_str(shape_) + " " + dtype_name(dtype_));
  }
  const std::size_t bytes = nbytes();
  if (bytes == 0) return;
  if (device_.is_cpu() && src.device_.is_cpu()) {
    std::memcpy(data_ptr(), src.data_ptr(), bytes);
    return;
  }
  // With unified virtual addressing the runtime knows from each pointer where it lives, so
  // cudaMemcpyDefault covers host->device, device->host and device->device (also between GPUs).
  // .to() with non_blocking=False: queue the copy, then wait for it. (A plain cudaMemcpy from
  // pageable memory may return once the data is staged, before the DMA has landed, so it is not
  // enough on its own; PyTorch also synchronizes after its copy.)
  DeviceGuard on(device_.is_cuda() ? device_.index : src.device_.index);
  CUDA_CHECK(cudaMemcpyAsync(data_ptr(), src.data_ptr(), bytes, cudaMemcpyDefault, nullptr));
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

}  // namespace workbook::transfer

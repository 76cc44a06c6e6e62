// tensor.h: a minimal tensor, to show what torch.Tensor keeps where.
//
//   transfer::Tensor x = transfer::Tensor::empty({1024, 256}, transfer::DType::kFloat32,
//                                                 transfer::Device::cpu());
//   transfer::Tensor g = x.cuda(0);     // cudaMalloc on device 0, then one cudaMemcpy
//   g.shape(); g.get_device();          // host reads only: no GPU call, no synchronization
//   transfer::Tensor back = g.cpu();    // a new host tensor; `back` equals `x` byte for byte
//
// The metadata (shape, dtype, device) is a small host object, exactly as in PyTorch; only the
// elements live where the device says. Device index -1 is the host, as Tensor.get_device()
// returns for CPU tensors; 0, 1, ... are GPUs. Copies here are synchronous (non_blocking=False);
// tensor_transfer.cu shows the asynchronous kind on raw buffers.
#pragma once

#include "device_guard.h"
#include "host_memory.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace workbook::transfer {

enum class DType { kFloat32, kFloat64, kInt32, kUInt8 };

std::size_t element_size(DType dtype);  // bytes per element: 4, 8, 4, 1
const char* dtype_name(DType dtype);     // "float32", ...

// Where a tensor's elements live: index -1 is the host, N >= 0 is GPU N.
struct Device {
  int index = -1;

  static Device cpu() { return Device{-1}; }
  static Device cuda(int gpu = 0);  // throws std::invalid_argument for a negative index
  bool is_cpu() const { return index < 0; }
  bool is_cuda() const { return index >= 0; }
  std::string str() const;          // "cpu" or "cuda:N", as torch.device prints
};

inline bool operator==(Device a, Device b) { return a.index == b.index; }
inline bool operator!=(Device a, Device b) { return a.index != b.index; }

// "cpu", "cuda" (GPU 0) or "cuda:N", as torch.device(...) accepts them; throws
// std::invalid_argument otherwise. Whether GPU N exists is checked only when memory is allocated
// there, as in PyTorch.
Device parse_device(const std::string& text);

using Shape = std::vector<std::int64_t>;

// Product of the dimensions (1 for a scalar shape {}); throws std::invalid_argument for a
// negative dimension or a product that overflows.
std::int64_t numel_of(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"

class Tensor {
 public:
  // Uninitialized elements, like torch.empty. On the host, `host_memory` picks pageable (the
  // default, like PyTorch) or pinned; on a GPU it is ignored.
  static Tensor empty(Shape shape, DType dtype, Device device,
                      HostMemory host_memory = HostMemory::kPageable);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int get_device() const { return device_.index; }  // -1 on the host, as in PyTorch
  bool is_cuda() const { return device_.is_cuda(); }
  bool is_pinned() const;                           // a host tensor in page-locked memory
  std::int64_t numel() const { return numel_of(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype_); }

  // The elements. Dereference only on the side where they live (host pointer or device pointer).
  void* data_ptr();
  const void* data_ptr() const;

  // A tensor on `target`. Already there: the same storage, no copy (PyTorch's .to() does the
  // same). Otherwise a new allocation on `target` and one synchronous copy. A GPU index that does
  // not exist throws workbook::CudaError (cudaErrorInvalidDevice), PyTorch's "invalid device
  // ordinal".
  Tensor to(Device target) const;
  Tensor cuda(int gpu = 0) const { return to(Device::cuda(gpu)); }
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor pin_memory() const;  // a pinned host copy of a host tensor

  // Copies `src`'s elements into this tensor (same dtype and element count, any two devices),
  // synchronously; zero elements copies nothing and calls no CUDA function.
  void copy_(const Tensor& src);

  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

 private:
  struct Storage;
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, Device device);

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  Device device_;
};

// DeviceGuard, which makes a device current for a scope and then restores the previous one (what
// PyTorch's CUDAGuard and `with torch.cuda.device(N)` do; an index that does not exist throws
// CudaError): common/device_guard.h.

}  // namespace workbook::transfer

#pragma once
// Tensors of the workloads: a float32 view (data + shape) into memory an Arena took from a Device. Every
// buffer a model needs is taken once, when the model is built for a batch size, so a training step
// allocates nothing and the arena's size is the run's memory footprint (reported as peak memory).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/device.h"

namespace ts::wl {

struct Tensor {
  float* data = nullptr;  // in device memory
  std::vector<std::int64_t> shape;
  Device* device = nullptr;
  std::size_t numel() const;
  std::int64_t dim(std::size_t i) const { return shape.at(i); }
  std::string shapeText() const;  // "[4, 3, 32, 32]"
  std::vector<float> toHost() const;
  void fromHost(const std::vector<float>& values) const;  // numel() values
};

class Arena {
 public:
  explicit Arena(Device& device = Device::hostCpu()) : device_(&device) {}
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Tensor tensor(std::vector<std::int64_t> shape);  // zero-filled
  int* ints(std::size_t n);                        // zero-filled
  std::size_t bytes() const { return bytes_; }
  Device& device() const { return *device_; }

 private:
  Device* device_;
  std::vector<void*> blocks_;
  std::size_t bytes_ = 0;
};

void zero(const Tensor& t);
void copy(const Tensor& dst, const Tensor& src);  // same numel, same device

}  // namespace ts::wl

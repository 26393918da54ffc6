#pragma once
// Tensors of the workloads: a float32 view (data + shape) into memory an Arena owns. Every buffer a model
// needs is taken from its arena once, when the model is built for a batch size, so a training step
// allocates nothing and the arena's size is the run's memory footprint (reported as peak memory).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ts::wl {

struct Tensor {
  float* data = nullptr;
  std::vector<std::int64_t> shape;
  std::size_t numel() const;
  std::int64_t dim(std::size_t i) const { return shape.at(i); }
  std::string shapeText() const;  // "[4, 3, 32, 32]"
};

class Arena {
 public:
  Tensor tensor(std::vector<std::int64_t> shape);  // zero-filled
  int* ints(std::size_t n);                          // zero-filled
  std::size_t bytes() const { return bytes_; }

 private:
  std::vector<std::unique_ptr<float[]>> floats_;
  std::vector<std::unique_ptr<int[]>> ints_;
  std::size_t bytes_ = 0;
};

void zero(const Tensor& t);
void copy(const Tensor& dst, const Tensor& src);  // same numel

}  // namespace ts::wl

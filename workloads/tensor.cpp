#include "workloads/tensor.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"

namespace ts::wl {

std::size_t Tensor::numel() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return shape.empty() ? 0 : n;
}

std::string Tensor::shapeText() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor Arena::tensor(std::vector<std::int64_t> shape) {
  Tensor t{nullptr, std::move(shape)};
  for (auto d : t.shape)
    if (d <= 0) throw Error(fmt::format("internal: a tensor of shape {}", t.shapeText()));
  const std::size_t n = t.numel();
  try {
    floats_.push_back(std::make_unique<float[]>(n));  // value-initialised: zeros
  } catch (const std::bad_alloc&) {
    throw Error(fmt::format("out of host memory for a tensor of shape {} ({} bytes; {} bytes taken before it)", t.shapeText(), n * 4, bytes_));
  }
  bytes_ += n * sizeof(float);
  t.data = floats_.back().get();
  return t;
}

int* Arena::ints(std::size_t n) {
  ints_.push_back(std::make_unique<int[]>(std::max<std::size_t>(n, 1)));
  bytes_ += n * sizeof(int);
  return ints_.back().get();
}

void zero(const Tensor& t) { std::memset(t.data, 0, t.numel() * sizeof(float)); }

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() != src.numel()) throw Error(fmt::format("internal: copy of {} into {}", src.shapeText(), dst.shapeText()));
  std::memcpy(dst.data, src.data, src.numel() * sizeof(float));
}

}  // namespace ts::wl

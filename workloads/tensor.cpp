#include "workloads/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "workloads/layers/recompute.h"

namespace ts::wl {

std::size_t Tensor::numel() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return shape.empty() ? 0 : n;
}

std::string Tensor::shapeText() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::vector<float> Tensor::toHost() const {
  std::vector<float> out(numel());
  device->download(out.data(), data, out.size() * sizeof(float));
  return out;
}

void Tensor::fromHost(const std::vector<float>& values) const {
  if (values.size() != numel())
    throw Error(fmt::format("internal: {} values for a tensor of shape {}", values.size(), shapeText()));
  device->upload(data, values.data(), values.size() * sizeof(float));
}

Arena::~Arena() {
  for (void* p : blocks_) device_->release(p);
}

Tensor Arena::tensor(std::vector<std::int64_t> shape, MemoryKind kind) {
  if (pool_ && kind == MemoryKind::kActivations) return pool_->tensor(std::move(shape));
  return own(std::move(shape), kind);
}

Tensor Arena::state(std::vector<std::int64_t> shape) {
  if (pool_ && pool_->scratch()) return pool_->tensor(std::move(shape));
  return own(std::move(shape), MemoryKind::kActivations);
}

Tensor Arena::own(std::vector<std::int64_t> shape, MemoryKind kind) {
  Tensor t{nullptr, std::move(shape), device_};
  for (auto d : t.shape)
    if (d <= 0) throw Error(fmt::format("internal: a tensor of shape {}", t.shapeText()));
  const std::size_t bytes = t.numel() * sizeof(float);
  t.data = static_cast<float*>(device_->allocate(bytes, kind));  // zeroed; out of memory names the sizes
  blocks_.insert(t.data);
  return t;
}

int* Arena::ints(std::size_t n, MemoryKind kind) {
  // Pooled like a float tensor of as many elements (4 bytes each): a pool's slot is untyped memory from the
  // device, and a unit's ints (a max pool's argmax, the loss's targets) are shared or scratch as its floats are.
  static_assert(sizeof(int) == sizeof(float));
  if (pool_ && kind == MemoryKind::kActivations)
    return reinterpret_cast<int*>(pool_->tensor({static_cast<std::int64_t>(std::max<std::size_t>(n, 1))}).data);
  const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(int);
  int* p = static_cast<int*>(device_->allocate(bytes, kind));
  blocks_.insert(p);
  return p;
}

void Arena::release(Tensor& t) {
  if (!blocks_.erase(t.data)) throw Error(fmt::format("internal: Arena::release of a tensor {} it does not hold", t.shapeText()));
  device_->release(t.data);
  t.data = nullptr;
}

void zero(const Tensor& t) { t.device->zero(t.data, t.numel() * sizeof(float)); }

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() != src.numel() || dst.device != src.device)
    throw Error(fmt::format("internal: copy of {} into {}", src.shapeText(), dst.shapeText()));
  dst.device->copy(dst.data, src.data, src.numel() * sizeof(float));
}

}  // namespace ts::wl

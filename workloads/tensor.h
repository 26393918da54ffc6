#pragma once
// Tensors of the workloads: a float32 view (data + shape) into memory an Arena took from a Device. The
// buffers a model needs are taken when it is built for a batch size; the layouts that exist to save
// memory (ZeRO 2 and 3) take a layer's gathered weights or gradient buckets only while they are in use and
// give them back (Arena::release). Every block is counted by kind on the device (memory.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
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

class ActivationPool;

class Arena {
 public:
  explicit Arena(Device& device = Device::hostCpu()) : device_(&device) {}
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  // Zero-filled, counted under `kind` (memory.h).
  Tensor tensor(std::vector<std::int64_t> shape, MemoryKind kind = MemoryKind::kActivations);
  int* ints(std::size_t n, MemoryKind kind = MemoryKind::kActivations);
  // Gives t's memory back to the device before the arena ends (a layout that keeps a parameter's
  // gradient elsewhere, a layer gathered only while it runs); t is left empty (no data).
  void release(Tensor& t);
  Device& device() const { return *device_; }
  // From now on makeParam gives parameters a shape and an initialisation but no memory: a model built so holds
  // none of its weights until a layout materialises the part it keeps (param_init.h), so no rank ever holds
  // the whole model on the way to its share.
  void deferParameters() { deferParameters_ = true; }
  bool defersParameters() const { return deferParameters_; }
  // Activation recomputation (layers/recompute.h), and a pipeline rank's other stages (models/model.h,
  // BuiltLayers): while set, tensor() hands out kActivations tensors from `pool` (shared with the other units
  // built in it); nullptr: from the device, as every other kind. Returns the pool it replaces (scopes nest).
  ActivationPool* poolActivations(ActivationPool* pool) { return std::exchange(pool_, pool); }
  ActivationPool* activationPool() const { return pool_; }
  // A tensor of its own from the device, whatever is pooled (what the pool takes its slots with).
  Tensor own(std::vector<std::int64_t> shape, MemoryKind kind);
  // A layer's state that outlives a pass (batch norm's running statistics): its own memory, counted with the
  // activations, never shared with a recomputed unit's; scratch where the layer is never trained here.
  Tensor state(std::vector<std::int64_t> shape);

 private:
  Device* device_;
  bool deferParameters_ = false;
  ActivationPool* pool_ = nullptr;
  std::unordered_set<void*> blocks_;  // what it holds (the device counts the bytes)
};

void zero(const Tensor& t);
void copy(const Tensor& dst, const Tensor& src);  // same numel, same device

}  // namespace ts::wl

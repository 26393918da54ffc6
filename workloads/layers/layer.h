#pragma once
// A layer: forward on a batch it was built for, backward that returns the input gradient and accumulates
// its parameters' gradients, the parameters it owns, and its forward FLOPs. The models are lists of
// layers so that the parallel layouts can cut them into pipeline stages, split a layer across ranks
// (tensor parallel), and hand each parameter's gradient out the moment it is final (overlapped data
// parallel: StepContext::gradReady).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/tensor.h"

namespace ts::wl {

struct Param {
  std::string name;  // "blocks.0.attn.qkv.weight": the name in checkpoints (PyTorch's naming style)
  Tensor value, grad;
  bool decay = true;  // weight decay applies (weights), not to biases and normalisation gains
};

// State that is not trained but belongs in a checkpoint (BatchNorm's running statistics).
struct NamedTensor {
  std::string name;
  Tensor* tensor;
};

class Layer;

// What one forward/backward pass is part of.
struct StepContext {
  bool training = true;
  // Called once per parameter when its gradient for this backward is complete.
  std::function<void(Param&)> gradReady;
  void ready(Param& p) {
    if (gradReady) gradReady(p);
  }
  // Around each of the model's layers, when set (ZeRO-3 gathers a layer's parameters before it runs and
  // releases them after).
  std::function<void(Layer&)> beforeForward, afterForward, beforeBackward, afterBackward;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // The output (owned by the layer, valid until its next forward). x must stay valid until backward.
  virtual const Tensor& forward(const Tensor& x, StepContext& ctx) = 0;
  // The gradient of the input (owned by the layer, overwritten each call); parameter gradients are
  // accumulated (+=) so micro-batches sum.
  virtual const Tensor& backward(const Tensor& dy, StepContext& ctx) = 0;
  virtual void params(std::vector<Param*>&) {}
  virtual void buffers(std::vector<NamedTensor>&) {}
  virtual double forwardFlops() const { return 0; }  // matmul/conv FLOPs of one forward at the built batch
};

// Parameters initialised from (seed, name): independent of the order layers are built in.
class Init {
 public:
  explicit Init(std::uint64_t seed) : seed_(seed) {}
  void normal(const Tensor& t, const std::string& name, double stddev) const;
  void uniform(const Tensor& t, const std::string& name, double bound) const;  // U(-bound, bound)
  void constant(const Tensor& t, float value) const;

 private:
  std::uint64_t seed_;
};

// A parameter and its gradient from the arena.
Param makeParam(Arena& arena, std::string name, std::vector<std::int64_t> shape, bool decay = true);

}  // namespace ts::wl

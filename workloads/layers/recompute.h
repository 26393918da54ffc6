#pragma once
// Activation recomputation (--recompute): memory traded for compute, the function unchanged.
//
// The layers keep what their backward reads in buffers taken when the model is built (tensor.h), so
// recomputation saves memory by letting the units it recomputes share those buffers: only one unit's
// internals are live at a time, when the unit runs its forward, or its recomputed forward and then its
// backward. What a unit keeps between its forward and its backward is its input (the previous unit's output,
// a copy of its own) and nothing else.
//   full       the unit is a transformer block, or an mlp hidden layer (its Linear, activation and dropout:
//              a Linear alone keeps nothing its successor does not, so the unit reaches the activation whose
//              output is all the next one reads). Its forward keeps a copy of its output (the next unit's
//              input); its backward re-runs its forward from the input, then runs its backward.
//   selective  Megatron's: the attention probabilities softmax(q k^T) [B, H, T, T] are dropped after the
//              forward and recomputed from q and k in the backward; the O(T^2) buffers (the probabilities and
//              the backward's two [B, H, T, T] gradients) are shared by all blocks. Nothing for the mlp.
// The recomputed forward runs the same ops in the same order on the same inputs, and dropout's masks are keyed
// by (seed, layer, step, sample, feature) (dropout.h), so the loss is bit-equal to --recompute none's.
// docs/architecture.md ("Activation recomputation") has what each mode keeps, per block, in bytes.
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/precision.h"
#include "workloads/layers/layer.h"

namespace ts::wl {

enum class Recompute { kNone, kSelective, kFull };

// Buffers shared by units that never need them at the same time: each unit asks for its tensors after
// beginUnit(), and gets the smallest free slot that holds each (a new slot from the arena when none does), so
// units of one shape share one set. Counted once, as activations.
class ActivationPool {
 public:
  // scratch: the buffers of layers never trained here (BuiltLayers, models/model.h), their state included.
  explicit ActivationPool(Arena& arena, bool scratch = false) : arena_(&arena), scratch_(scratch) {}
  bool scratch() const { return scratch_; }
  void beginUnit();
  Tensor tensor(std::vector<std::int64_t> shape);
  std::size_t bytes() const;
  bool unitUsed() const;  // whether the unit begun last took a tensor

 private:
  struct Slot {
    float* data;
    std::size_t numel;
    bool used;
  };
  Arena* arena_;
  bool scratch_;
  std::vector<Slot> slots_;
};

// While alive, the activations `arena` hands out come from `pool` (a new unit of it): a layer built inside
// the scope shares its buffers with the other units built in the pool's scopes.
class PooledActivations {
 public:
  PooledActivations(Arena& arena, ActivationPool& pool);
  ~PooledActivations();
  PooledActivations(const PooledActivations&) = delete;
  PooledActivations& operator=(const PooledActivations&) = delete;

 private:
  Arena& arena_;
  ActivationPool* outer_;  // the scope this one is inside (restored at its end)
};

// The buffers full recomputation shares: one unit's internals, and the units' input gradients (unit i's is
// read by unit i-1's backward, which writes its own: two alternate).
struct RecomputePools {
  explicit RecomputePools(Arena& arena) : internals(arena), inputGradients{ActivationPool(arena), ActivationPool(arena)} {}
  ActivationPool internals;
  ActivationPool inputGradients[2];
};

// What a unit of full recomputation is: its place among the units (`index` alternates the input-gradient
// buffers), its input's and output's shapes, and whether its input is the model's data (no input gradient:
// it holds zeros of its own instead of a shared buffer).
struct RecomputedUnit {
  std::size_t index = 0;
  std::vector<std::int64_t> inShape, outShape;
  bool dataInput = false;
  // False on a pipeline rank for another stage's unit (never trained here, its backward never run): its output
  // comes from the scratch buffers the arena hands out then (models/model.h, BuiltLayers), and it has no input
  // gradient; its internals share the units' buffers as every unit's do.
  bool kept = true;
};

// One unit of full recomputation: `layers` (built inside a PooledActivations scope of pools.internals) run as
// one layer of the model. `precision` is the model's compute precision (what Model rounds between its
// layers, rounded here between the unit's).
class Recomputed final : public Layer {
 public:
  Recomputed(Arena& arena, RecomputePools& pools, const RecomputedUnit& unit, std::vector<std::unique_ptr<Layer>> layers,
             const Precision& precision);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  // The gathers, hooks and collectives of the unit's forward run again here (ZeRO-3 gathered its parameters
  // in beforeBackward, before this; tensor parallelism sums again, in the same order on every rank).
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  void buffers(std::vector<NamedTensor>& out) override;
  double forwardFlops() const override { return sumOver(&Layer::forwardFlops); }
  double rankForwardFlops() const override { return sumOver(&Layer::rankForwardFlops); }
  double recomputedFlops() const override { return forwardFlops(); }
  double rankRecomputedFlops() const override { return rankForwardFlops(); }
  void skipInputGradient() override;
  // The backward's begin with the forward's again (it runs the forward first).
  void groupSums(LayerSums& out) const override;

 private:
  const Tensor& runForward(const Tensor& x, StepContext& ctx);
  double sumOver(double (Layer::*flops)() const) const;  // the unit's layers' FLOPs of one kind
  Arena* arena_;
  std::vector<std::unique_ptr<Layer>> layers_;
  const Precision* precision_;
  const Tensor* x_ = nullptr;
  Tensor out_, dx_;
  bool inputGradient_ = true;
};

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::Recompute> {
  static constexpr std::pair<std::string_view, wl::Recompute> kNames[] = {
      {"none", wl::Recompute::kNone}, {"selective", wl::Recompute::kSelective}, {"full", wl::Recompute::kFull}};
};
}  // namespace ts

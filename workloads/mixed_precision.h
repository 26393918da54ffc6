#pragma once
// Mixed precision on the CPU backend, emulated with real 16-bit arithmetic where it matters: the float32
// master weights are rounded to bfloat16 or float16 for the forward and backward of each step (the
// compute copy, as on a GPU), the activations and the activation gradients passed between layers are
// rounded to the format (so float16's range and overflow are real: a gradient past 65504 becomes inf),
// and products accumulate in float32 as tensor cores do. Parameter gradients and the optimizer stay
// float32.
//
// float16 needs dynamic loss scaling (LossScaler): the loss is multiplied by a scale before the
// backward so small gradients survive the format; a step whose gradients overflowed is skipped and the
// scale halved; after `growthInterval` good steps it doubles (torch.cuda.amp.GradScaler's rules).
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "workloads/layers/layer.h"

namespace ts::wl {

// Rounds x to the precision's 16-bit format in place (no-op for float32).
void roundTo(Precision p, const Tensor& x);

// The float32 masters of the weights while the values hold the 16-bit compute copies. A rank keeps the
// masters of what it updates (`updated`: the whole model, or its ZeRO / parameter-server shards, as the
// ZeRO paper counts them: 4 bytes per parameter / N) and rounds the values it keeps (`kept`: the whole
// model, or ZeRO-3's shards). With sharded masters, the values outside this rank's shards are float32
// again only once the owners' updates are gathered: after a skipped step, the sync's afterUpdate() must
// still run (shardsMasters()).
class MasterWeights {
 public:
  MasterWeights(Precision p, const std::vector<Param*>& updated, const std::vector<Param*>& kept, Arena& arena);
  void beginStep();  // keep the masters, round the values
  void endStep();    // put the masters back (before the optimizer updates them)
  bool shardsMasters() const { return sharded_; }

 private:
  Precision p_;
  std::vector<Param*> updated_, kept_;
  std::vector<Tensor> masters_;  // one per updated parameter
  bool sharded_;
};

class LossScaler {
 public:
  explicit LossScaler(double initialScale = 65536.0, int growthInterval = 2000);
  double scale() const { return scale_; }
  std::int64_t skippedSteps() const { return skipped_; }  // over the whole run, resumes included
  // After the backward: false (skip the step, halve the scale) when a gradient is inf or NaN; true
  // otherwise, after dividing the gradients by the scale.
  // globalSum, when given, turns this rank's sum of squares into the whole update's (sharded layouts),
  // so that every rank takes the same decision.
  bool unscaleAndCheck(const std::vector<Param*>& params, const std::function<double(double)>& globalSum = {});
  nlohmann::json state() const;
  void restore(const nlohmann::json& state);  // UsageError for a malformed state

 private:
  double scale_;
  int growthInterval_;
  int goodSteps_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace ts::wl

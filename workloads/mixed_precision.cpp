#include "workloads/mixed_precision.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/dtype.h"
#include "base/error.h"
#include "base/json_text.h"
#include "workloads/device_ops.h"

namespace ts::wl {

void roundTo(Precision p, const Tensor& x) {
  if (p == Precision::kBFloat16)
    ops::roundToBFloat16(*x.device, x.data, x.numel());
  else if (p == Precision::kFloat16)
    ops::roundToHalf(*x.device, x.data, x.numel());
}

MasterWeights::MasterWeights(Precision p, const std::vector<Param*>& updated, const std::vector<Param*>& kept, Arena& arena)
    : p_(p),
      updated_(updated),
      kept_(kept),
      // Pieces of the kept parameters (ZeRO-1/2, the parameter server), on every rank of the layout alike.
      sharded_(updated != kept) {
  for (Param* q : updated_) masters_.push_back(arena.tensor(q->value.shape, MemoryKind::kMasterWeights));
}

void MasterWeights::beginStep() {
  for (std::size_t i = 0; i < updated_.size(); ++i) copy(masters_[i], updated_[i]->value);
  for (Param* q : kept_) roundTo(p_, q->value);
}

void MasterWeights::endStep() {
  for (std::size_t i = 0; i < updated_.size(); ++i) copy(updated_[i]->value, masters_[i]);
}

LossScaler::LossScaler(double initialScale, int growthInterval) : scale_(initialScale), growthInterval_(growthInterval) {
  if (!(initialScale > 0) || !std::isfinite(initialScale))
    throw UsageError(fmt::format("--loss-scale {}: must be a positive number", initialScale));
  if (growthInterval < 1) throw UsageError("--loss-scale-interval must be at least 1");
}

bool LossScaler::unscaleAndCheck(const std::vector<Param*>& params, const std::function<double(double)>& globalSum) {
  double sq = 0;
  for (Param* p : params) sq += ops::sumOfSquares(*p->grad.device, p->grad.data, p->grad.numel());
  if (globalSum) sq = globalSum(sq);
  if (!std::isfinite(sq)) {
    scale_ *= 0.5;
    goodSteps_ = 0;
    ++skipped_;
    return false;
  }
  const float inv = static_cast<float>(1.0 / scale_);
  for (Param* p : params) ops::scale(*p->grad.device, p->grad.data, inv, p->grad.numel());
  if (++goodSteps_ >= growthInterval_) {
    scale_ *= 2.0;
    goodSteps_ = 0;
  }
  return true;
}

nlohmann::json LossScaler::state() const {
  return {{"scale", scale_}, {"growth_interval", growthInterval_}, {"good_steps", goodSteps_}, {"skipped_steps", skipped_}};
}

void LossScaler::restore(const nlohmann::json& s) {
  if (!s.is_object() || !s.contains("scale") || !s["scale"].is_number() || !s.contains("good_steps") ||
      !s["good_steps"].is_number_integer())
    throw UsageError(fmt::format("--resume: the checkpoint's loss-scaler state is malformed ({})", jsonText(s)));
  scale_ = s["scale"].get<double>();
  goodSteps_ = s["good_steps"].get<int>();
  if (s.contains("growth_interval") && s["growth_interval"].is_number_integer())
    growthInterval_ = s["growth_interval"].get<int>();
  if (s.contains("skipped_steps") && s["skipped_steps"].is_number_integer()) skipped_ = s["skipped_steps"].get<std::int64_t>();
}

}  // namespace ts::wl

#include "workloads/optim/optimizer.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/device_ops.h"

namespace ts::wl {

bool keepsTwoMoments(OptimizerKind kind) {
  return kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW || kind == OptimizerKind::kLamb;
}

nlohmann::json OptimizerOptions::toJson() const {
  nlohmann::json j = {{"kind", nameOf(kind)}, {"weight_decay", weightDecay}};
  if (kind == OptimizerKind::kSgd) j["momentum"] = momentum;
  if (kind == OptimizerKind::kRmsprop) j["alpha"] = alpha;
  if (keepsTwoMoments(kind)) {
    j["beta1"] = beta1;
    j["beta2"] = beta2;
  }
  if (kind != OptimizerKind::kSgd) j["eps"] = eps;
  return j;
}

void validateOptimizerOptions(const OptimizerOptions& o) {
  if (o.weightDecay < 0) throw UsageError(fmt::format("--weight-decay {}: must be >= 0", o.weightDecay));
  if (o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1) throw UsageError("--beta1 and --beta2 must be in [0, 1)");
  if (o.momentum < 0 || o.momentum >= 1) throw UsageError(fmt::format("--momentum {}: must be in [0, 1)", o.momentum));
  if (o.eps <= 0) throw UsageError("--eps must be > 0");
}

Optimizer::Optimizer(const OptimizerOptions& options, std::vector<Param*> params, Arena& arena, PartSums partSums)
    : o_(options), partSums_(std::move(partSums)) {
  validateOptimizerOptions(o_);
  const bool two = keepsTwoMoments(o_.kind);
  std::size_t largest = 0;
  for (Param* p : params) {
    Slot s{p, arena.tensor(p->value.shape, MemoryKind::kOptimizer), {}};
    if (two) s.b = arena.tensor(p->value.shape, MemoryKind::kOptimizer);
    largest = std::max(largest, p->value.numel());
    slots_.push_back(std::move(s));
  }
  if (o_.kind == OptimizerKind::kLamb && largest && !partSums_)
    scratch_ = arena.tensor({static_cast<std::int64_t>(largest)}, MemoryKind::kOptimizer);
}

namespace {
cpu::ElementwiseUpdate elementwiseKind(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kSgd:
      return cpu::ElementwiseUpdate::kSgd;
    case OptimizerKind::kAdam:
      return cpu::ElementwiseUpdate::kAdam;
    case OptimizerKind::kAdamW:
      return cpu::ElementwiseUpdate::kAdamW;
    case OptimizerKind::kRmsprop:
      return cpu::ElementwiseUpdate::kRmsprop;
    case OptimizerKind::kLamb:
      break;
  }
  throw Error("LAMB is not an element-wise update");
}
}  // namespace

// Weight decay applies to weights, never to biases and normalisation gains.
float Optimizer::decayOf(const Param& p) const { return p.decay ? static_cast<float>(o_.weightDecay) : 0.0f; }

// LAMB over parts of tensors: every part's moments and sums first, the sums added over the ranks (one
// collective for all), then every part's step with its whole tensor's trust ratio.
void Optimizer::lambInParts(float lr, int t) {
  const float b1 = float(o_.beta1), b2 = float(o_.beta2), eps = float(o_.eps);
  std::vector<double> sums(2 * slots_.size(), 0.0);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Param& p = *slots_[i].p;
    ops::lambMoments(*p.value.device, p.value.data, p.grad.data, slots_[i].a.data, slots_[i].b.data, p.value.numel(), b1, b2, eps,
                     decayOf(p), t, &sums[2 * i]);
  }
  partSums_(sums);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Param& p = *slots_[i].p;
    ops::lambApply(*p.value.device, p.value.data, slots_[i].a.data, slots_[i].b.data, p.value.numel(), lr, b1, b2, eps,
                   decayOf(p), t, cpu::lambTrust(sums[2 * i], sums[2 * i + 1]));
  }
}

void Optimizer::step(double lrD, int t) {
  const float lr = static_cast<float>(lrD), b1 = float(o_.beta1), b2 = float(o_.beta2), eps = float(o_.eps);
  if (o_.kind == OptimizerKind::kLamb && partSums_) return lambInParts(lr, t);
  if (slots_.empty()) return;
  if (o_.kind == OptimizerKind::kLamb) {
    for (Slot& s : slots_) {
      Param& p = *s.p;
      ops::lambUpdate(*p.value.device, p.value.data, p.grad.data, s.a.data, s.b.data, scratch_.data, p.value.numel(), lr, b1, b2,
                      eps, decayOf(p), t);
    }
    return;
  }
  // The element-wise ones: every tensor in one call (multi-tensor).
  std::vector<cpu::UpdateTensor> many;
  many.reserve(slots_.size());
  for (Slot& s : slots_) many.push_back({s.p->value.data, s.p->grad.data, s.a.data, s.b.data, s.p->value.numel(), decayOf(*s.p)});
  ops::updateMany(*slots_.front().p->value.device,
                  {elementwiseKind(o_.kind), lr, b1, b2, eps, float(o_.momentum), float(o_.alpha), t}, many);
}

// As the constructor's slots (a first tensor per parameter, a second where the kind keeps two) and state()'s order.
std::vector<std::size_t> optimizerStateElements(OptimizerKind kind, const std::vector<Param*>& params) {
  std::vector<std::size_t> out;
  for (const Param* p : params) out.insert(out.end(), keepsTwoMoments(kind) ? 2 : 1, p->value.numel());
  return out;
}

std::vector<Optimizer::State> Optimizer::state() {
  std::vector<State> out;
  const char* first = o_.kind == OptimizerKind::kSgd       ? "momentum_buffer"
                      : o_.kind == OptimizerKind::kRmsprop ? "square_avg"
                                                           : "exp_avg";
  for (Slot& s : slots_) {
    out.push_back({s.p, first, &s.a});
    if (s.b.data) out.push_back({s.p, "exp_avg_sq", &s.b});
  }
  return out;
}

}  // namespace ts::wl

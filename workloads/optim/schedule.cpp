#include "workloads/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

void Schedule::scaleFor(std::int64_t globalBatch) {
  givenLr = lr;
  if (scaling == LrScaling::kNone) return;
  const double ratio = static_cast<double>(globalBatch) / static_cast<double>(baseBatch);
  const double factor = scaling == LrScaling::kLinear ? ratio : std::sqrt(ratio);
  lr *= factor;
  minLr *= factor;
}

double Schedule::at(std::int64_t s) const {
  if (kind == ScheduleKind::kConstant) return lr;
  if (kind == ScheduleKind::kStep) return lr * std::pow(gamma, static_cast<double>(s / std::max<std::int64_t>(stepSize, 1)));
  if (kind == ScheduleKind::kCyclic) {
    // Triangular: x runs 1 -> 0 -> 1 over each cycle of 2 step_size updates; the rate min_lr -> lr -> min_lr.
    const double half = static_cast<double>(std::max<std::int64_t>(stepSize, 1));
    const double cycle = std::floor(1.0 + static_cast<double>(s) / (2.0 * half));
    const double x = std::fabs(static_cast<double>(s) / half - 2.0 * cycle + 1.0);
    return minLr + (lr - minLr) * std::max(0.0, 1.0 - x);
  }
  if (s < warmup) return lr * static_cast<double>(s + 1) / static_cast<double>(warmup);
  const double span = static_cast<double>(std::max<std::int64_t>(total - warmup, 1));
  const double progress = std::min(1.0, static_cast<double>(s - warmup) / span);
  const double shape = kind == ScheduleKind::kCosine ? 0.5 * (1.0 + std::cos(3.141592653589793 * progress)) : 1.0 - progress;
  return minLr + (lr - minLr) * shape;
}

nlohmann::json Schedule::toJson() const {
  nlohmann::json j = {{"kind", nameOf(kind)}, {"lr", lr}};
  if (kind == ScheduleKind::kStep) {
    j["step_size"] = stepSize;
    j["gamma"] = gamma;
  }
  if (kind == ScheduleKind::kCyclic) {
    j["step_size"] = stepSize;
    j["min_lr"] = minLr;
  }
  if (scaling != LrScaling::kNone)
    j["scaling"] = {{"rule", nameOf(scaling)}, {"base_batch", baseBatch}, {"given_lr", givenLr}, {"factor", lr / givenLr}};
  if (kind == ScheduleKind::kCosine || kind == ScheduleKind::kLinear) {
    j["warmup"] = warmup;
    j["min_lr"] = minLr;
    j["total"] = total;
  }
  return j;
}

void validateSchedule(const Schedule& s) {
  if (!(s.lr > 0) || !std::isfinite(s.lr)) throw UsageError(fmt::format("--lr {}: must be a positive number", s.lr));
  if (s.minLr < 0 || s.minLr > s.lr) throw UsageError("--min-lr must be in [0, --lr]");
  if (s.warmup < 0) throw UsageError("--lr-warmup must be >= 0");
  if (s.kind == ScheduleKind::kStep && (s.stepSize < 1 || s.gamma <= 0))
    throw UsageError("--lr-step-size must be >= 1 and --lr-gamma > 0");
  if (s.kind == ScheduleKind::kCyclic && s.stepSize < 1)
    throw UsageError("--lr-step-size (the cyclic schedule's half cycle) must be >= 1");
  if (s.scaling != LrScaling::kNone && s.baseBatch < 1)
    throw UsageError(
        fmt::format("--lr-scaling {} needs --base-batch: the global batch the given --lr is for", nameOf(s.scaling)));
  if (s.scaling == LrScaling::kNone && s.baseBatch != 0)
    throw UsageError("--base-batch is --lr-scaling's: give --lr-scaling linear or sqrt");
}

}  // namespace ts::wl

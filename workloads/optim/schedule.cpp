#include "workloads/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

double Schedule::at(std::int64_t s) const {
  if (kind == ScheduleKind::kConstant) return lr;
  if (kind == ScheduleKind::kStep) return lr * std::pow(gamma, static_cast<double>(s / std::max<std::int64_t>(stepSize, 1)));
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
}

}  // namespace ts::wl

#include "workloads/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

double Schedule::at(std::int64_t s) const {
  if (kind == "constant") return lr;
  if (kind == "step") return lr * std::pow(gamma, static_cast<double>(s / std::max<std::int64_t>(stepSize, 1)));
  if (s < warmup) return lr * static_cast<double>(s + 1) / static_cast<double>(warmup);
  const double span = static_cast<double>(std::max<std::int64_t>(total - warmup, 1));
  const double progress = std::min(1.0, static_cast<double>(s - warmup) / span);
  const double shape = kind == "cosine" ? 0.5 * (1.0 + std::cos(3.141592653589793 * progress)) : 1.0 - progress;
  return minLr + (lr - minLr) * shape;
}

nlohmann::json Schedule::toJson() const {
  nlohmann::json j = {{"kind", kind}, {"lr", lr}};
  if (kind == "step") {
    j["step_size"] = stepSize;
    j["gamma"] = gamma;
  }
  if (kind == "cosine" || kind == "linear") {
    j["warmup"] = warmup;
    j["min_lr"] = minLr;
    j["total"] = total;
  }
  return j;
}

void validateSchedule(const Schedule& s) {
  if (s.kind != "constant" && s.kind != "step" && s.kind != "cosine" && s.kind != "linear")
    throw UsageError(fmt::format("--schedule: unknown schedule '{}' (constant, step, cosine, linear)", s.kind));
  if (!(s.lr > 0) || !std::isfinite(s.lr)) throw UsageError(fmt::format("--lr {}: must be a positive number", s.lr));
  if (s.minLr < 0 || s.minLr > s.lr) throw UsageError("--min-lr must be in [0, --lr]");
  if (s.warmup < 0) throw UsageError("--lr-warmup must be >= 0");
  if (s.kind == "step" && (s.stepSize < 1 || s.gamma <= 0)) throw UsageError("--lr-step-size must be >= 1 and --lr-gamma > 0");
}

}  // namespace ts::wl

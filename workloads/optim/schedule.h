#pragma once
// Learning-rate schedules, as a function of the 0-based update index:
//   constant;  step: lr * gamma^(floor(s / step_size));  cosine / linear: linear warm-up over `warmup`
//   updates from lr/warmup to lr, then a cosine or linear decay to min_lr at `total` updates;  cyclic:
//   Smith's triangular cyclical rate, from min_lr up to lr and back over 2 x step_size updates, repeating.
// Large-batch rules (--lr-scaling): the given lr and min_lr scaled by the global batch over --base-batch
// (linear: Goyal et al.'s rule for SGD; sqrt: the square root, Krizhevsky's and the Adam practice), so a
// scaling study keeps one recipe across rank counts; the record keeps the given and the applied rates.
#include <cstdint>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

namespace ts::wl {

enum class ScheduleKind { kConstant, kStep, kCosine, kLinear, kCyclic };
enum class LrScaling { kNone, kLinear, kSqrt };

struct Schedule {
  ScheduleKind kind = ScheduleKind::kConstant;
  double lr = 1e-3, minLr = 0;
  std::int64_t warmup = 0, total = 1, stepSize = 1000;
  double gamma = 0.1;
  LrScaling scaling = LrScaling::kNone;
  std::int64_t baseBatch = 0;  // the batch the given rates are for (--lr-scaling)
  double givenLr = 0;          // lr before scaling (set by scaleFor)
  // Scales lr and min_lr for globalBatch by the rule (none: as given).
  void scaleFor(std::int64_t globalBatch);
  double at(std::int64_t update) const;
  nlohmann::json toJson() const;
};
void validateSchedule(const Schedule& s);  // UsageError naming the flag

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::ScheduleKind> {
  static constexpr std::pair<std::string_view, wl::ScheduleKind> kNames[] = {{"constant", wl::ScheduleKind::kConstant},
                                                                             {"step", wl::ScheduleKind::kStep},
                                                                             {"cosine", wl::ScheduleKind::kCosine},
                                                                             {"linear", wl::ScheduleKind::kLinear},
                                                                             {"cyclic", wl::ScheduleKind::kCyclic}};
};
template <>
struct EnumNames<wl::LrScaling> {
  static constexpr std::pair<std::string_view, wl::LrScaling> kNames[] = {
      {"none", wl::LrScaling::kNone}, {"linear", wl::LrScaling::kLinear}, {"sqrt", wl::LrScaling::kSqrt}};
};
}  // namespace ts

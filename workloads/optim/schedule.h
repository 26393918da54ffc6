#pragma once
// Learning-rate schedules, as a function of the 0-based update index:
//   constant;  step: lr * gamma^(floor(s / step_size));  cosine / linear: linear warm-up over `warmup`
//   updates from lr/warmup to lr, then a cosine or linear decay to min_lr at `total` updates.
#include <cstdint>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

namespace ts::wl {

enum class ScheduleKind { kConstant, kStep, kCosine, kLinear };

struct Schedule {
  ScheduleKind kind = ScheduleKind::kConstant;
  double lr = 1e-3, minLr = 0;
  std::int64_t warmup = 0, total = 1, stepSize = 1000;
  double gamma = 0.1;
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
                                                                             {"linear", wl::ScheduleKind::kLinear}};
};
}  // namespace ts

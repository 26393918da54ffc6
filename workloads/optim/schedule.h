#pragma once
// Learning-rate schedules, as a function of the 0-based update index:
//   constant;  step: lr * gamma^(floor(s / step_size));  cosine / linear: linear warm-up over `warmup`
//   updates from lr/warmup to lr, then a cosine or linear decay to min_lr at `total` updates.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ts::wl {

struct Schedule {
  std::string kind = "constant";  // constant | step | cosine | linear
  double lr = 1e-3, minLr = 0;
  std::int64_t warmup = 0, total = 1, stepSize = 1000;
  double gamma = 0.1;
  double at(std::int64_t update) const;
  nlohmann::json toJson() const;
};
void validateSchedule(const Schedule& s);  // UsageError naming the flag

}  // namespace ts::wl

#include "workloads/data/held_out.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ts::data {

GeneratedHeldOut::GeneratedHeldOut(std::shared_ptr<const Dataset> train, std::int64_t count) : train_(std::move(train)) {
  if (count < 1) throw Error(fmt::format("a held-out split of {} samples", count));
  info_ = train_->info();
  info_.split = Split::kHeldOut;
  info_.size = count;
}

void GeneratedHeldOut::sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const {
  train_->sample(train_->info().size + index, features, tokens, targets);
}

nlohmann::json GeneratedHeldOut::identity() const {
  return {{"held_out_of", train_->identity()}, {"first", train_->info().size}, {"size", info_.size}};
}

}  // namespace ts::data

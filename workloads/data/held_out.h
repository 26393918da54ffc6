#pragma once
// The held-out split of a generated dataset (the synthetic ones): a sample is a pure function of its index,
// defined past the training set's size too, so the held-out samples are the `count` indices after it:
// the same distribution, never trained on.
#include <memory>

#include "workloads/data/dataset.h"

namespace ts::data {

class GeneratedHeldOut : public Dataset {
 public:
  GeneratedHeldOut(std::shared_ptr<const Dataset> train, std::int64_t count);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;

 private:
  std::shared_ptr<const Dataset> train_;
  DataInfo info_;
};

}  // namespace ts::data

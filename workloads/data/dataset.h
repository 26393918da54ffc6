#pragma once
// A dataset: N samples, each addressable by index, plus what a model needs to know to fit it.
// Ordering, sharding and batching are the DataSource's; a dataset only answers "what is sample i".
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

#include "workloads/data/batch.h"

namespace ts::data {

// Which part of a data source: the samples training visits, or the held-out ones evaluation reads (never
// trained on): MNIST's and CIFAR-10's test files, the last tenth of a text file, and for synthetic data
// further samples of the same generator (indices past the training set's).
enum class Split { kTrain, kHeldOut };

struct DataInfo {
  std::string name;    // "synthetic", "mnist", "cifar10", "text"
  std::string origin;  // the directory or file read, "" for synthetic data
  Split split = Split::kTrain;
  Task task = Task::kClassification;
  // Inputs per sample: [D] or [C, H, W] float32 for classification, [T] tokens for language modelling.
  std::vector<std::int64_t> sampleShape;
  int classes = 0;        // classification: labels are 0 .. classes-1
  int vocab = 0;          // language modelling: tokens are 0 .. vocab-1
  std::int64_t size = 0;  // samples in one epoch

  std::int64_t sampleElements() const;  // product of sampleShape
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual const DataInfo& info() const = 0;
  // Writes sample `index` (0 ≤ index < size). Classification: sampleElements() floats to `features` and
  // one label to `targets` (`tokens` is null). Language modelling: T tokens to `tokens` and the T tokens
  // that follow each of them to `targets` (`features` is null). Must be pure and safe to call from
  // several threads at once: const, no hidden state, the same bytes for the same index every time.
  virtual void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const = 0;
  // Everything that decides the samples' content (kind, origin, generator parameters): two datasets with
  // equal identities give equal samples. Checkpoints keep it to check that a resumed run reads the same data.
  virtual nlohmann::json identity() const;
};

}  // namespace ts::data

namespace ts {
template <>
struct EnumNames<data::Split> {
  static constexpr std::pair<std::string_view, data::Split> kNames[] = {{"train", data::Split::kTrain},
                                                                        {"held_out", data::Split::kHeldOut}};
};
}  // namespace ts

#include "workloads/data/synthetic.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "workloads/data/counter_rng.h"

namespace ts::data {

namespace {
// Regions per side of the teacher's grid on images: 1, per-channel sums (see synthetic.h).
constexpr std::int64_t kTeacherGrid = 1;
}  // namespace

SyntheticClassification::SyntheticClassification(std::uint64_t seed, std::vector<std::int64_t> sampleShape, int classes,
                                                 std::int64_t size)
    : seed_(seed) {
  if (sampleShape.empty()) throw UsageError("synthetic data needs an input shape");
  for (std::int64_t d : sampleShape)
    if (d < 1) throw UsageError(fmt::format("synthetic input shape [{}] has a dimension below 1", fmt::join(sampleShape, ", ")));
  if (classes < 2) throw UsageError(fmt::format("synthetic classification needs at least 2 classes, not {}", classes));
  if (size < 1) throw UsageError(fmt::format("synthetic data needs at least 1 sample per epoch, not {}", size));
  info_.name = "synthetic";
  info_.task = Task::kClassification;
  info_.sampleShape = std::move(sampleShape);
  info_.classes = classes;
  info_.size = size;

  // The teacher reads pooled features z: for images the sum of each region's pixels (C·grid² of them),
  // otherwise the inputs themselves. Storing weights per pooled feature keeps the teacher small for
  // large images with many classes.
  const std::int64_t d = info_.sampleElements();
  const bool image = info_.sampleShape.size() == 3;
  const std::int64_t height = image ? info_.sampleShape[1] : 1;
  const std::int64_t width = image ? info_.sampleShape[2] : d;
  pooled_ = image ? info_.sampleShape[0] * kTeacherGrid * kTeacherGrid : d;
  poolOf_.resize(static_cast<std::size_t>(d));
  std::vector<double> poolCount(static_cast<std::size_t>(pooled_), 0.0);
  for (std::int64_t j = 0; j < d; ++j) {
    const std::int64_t x = j % width, y = (j / width) % height, c = j / (width * height);
    const std::int64_t f = image ? (c * kTeacherGrid + y * kTeacherGrid / height) * kTeacherGrid + x * kTeacherGrid / width : j;
    poolOf_[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(f);
    poolCount[static_cast<std::size_t>(f)] += 1;
  }
  teacher_.resize(static_cast<std::size_t>(classes * pooled_));
  for (int k = 0; k < classes; ++k) {
    float* row = &teacher_[static_cast<std::size_t>(k * pooled_)];
    double norm2 = 0;  // of the row as a map of the raw inputs: each pooled weight repeats over its region
    for (std::int64_t f = 0; f < pooled_; ++f) {
      row[f] = CounterRng(hashKey(seed, Stream::kTeacher, k, f)).normal();
      norm2 += static_cast<double>(row[f]) * row[f] * poolCount[static_cast<std::size_t>(f)];
    }
    const auto scale = static_cast<float>(1.0 / std::sqrt(norm2 > 0 ? norm2 : 1.0));
    for (std::int64_t f = 0; f < pooled_; ++f) row[f] *= scale;
  }
}

int SyntheticClassification::teacherLabel(const float* x) const {
  const std::int64_t d = info_.sampleElements();
  std::vector<double> z(static_cast<std::size_t>(pooled_), 0.0);
  for (std::int64_t j = 0; j < d; ++j) z[static_cast<std::size_t>(poolOf_[static_cast<std::size_t>(j)])] += x[j];
  int best = 0;
  double bestScore = -INFINITY;
  for (int k = 0; k < info_.classes; ++k) {
    const float* row = &teacher_[static_cast<std::size_t>(k * pooled_)];
    double s = 0;
    for (std::int64_t f = 0; f < pooled_; ++f) s += static_cast<double>(row[f]) * z[static_cast<std::size_t>(f)];
    if (s > bestScore) {
      bestScore = s;
      best = k;
    }
  }
  return best;
}

void SyntheticClassification::sample(std::int64_t index, float* features, std::int32_t*, std::int32_t* targets) const {
  CounterRng rng(hashKey(seed_, Stream::kFeatures, index));
  const std::int64_t d = info_.sampleElements();
  for (std::int64_t j = 0; j < d; ++j) features[j] = rng.normal();
  targets[0] = teacherLabel(features);
}

nlohmann::json SyntheticClassification::identity() const {
  return {{"kind", "synthetic"}, {"task", "classification"},          {"generator", 1},
          {"seed", seed_},       {"sample_shape", info_.sampleShape}, {"classes", info_.classes},
          {"size", info_.size}};
}

SyntheticTokens::SyntheticTokens(std::uint64_t seed, std::int64_t seqLen, int vocab, std::int64_t size, double noise)
    : seed_(seed), noise_(noise) {
  if (seqLen < 1) throw UsageError(fmt::format("sequence length {} is below 1", seqLen));
  if (vocab < 2) throw UsageError(fmt::format("synthetic tokens need a vocabulary of at least 2, not {}", vocab));
  if (size < 1) throw UsageError(fmt::format("synthetic data needs at least 1 sample per epoch, not {}", size));
  if (!(noise >= 0 && noise <= 1)) throw UsageError(fmt::format("synthetic token noise {} is not in [0, 1]", noise));
  info_.name = "synthetic";
  info_.task = Task::kLanguageModel;
  info_.sampleShape = {seqLen};
  info_.vocab = vocab;
  info_.size = size;
  successor_.resize(static_cast<std::size_t>(vocab));
  for (int a = 0; a < vocab; ++a)
    successor_[static_cast<std::size_t>(a)] =
        static_cast<std::int32_t>(hashKey(seed, Stream::kSuccessor, a) % static_cast<std::uint64_t>(vocab));
}

void SyntheticTokens::sample(std::int64_t index, float*, std::int32_t* tokens, std::int32_t* targets) const {
  CounterRng rng(hashKey(seed_, Stream::kTokens, index));
  const std::int64_t t = info_.sampleShape[0];
  const auto v = static_cast<std::uint64_t>(info_.vocab);
  auto token = static_cast<std::int32_t>(rng.below(v));
  for (std::int64_t i = 0; i <= t; ++i) {
    if (i < t) tokens[i] = token;
    if (i > 0) targets[i - 1] = token;
    // Both draws are made every time, so that each position's randomness is fixed whatever the noise.
    const bool random = rng.uniform() < noise_;
    const auto other = static_cast<std::int32_t>(rng.below(v));
    token = random ? other : successor(token);
  }
}

nlohmann::json SyntheticTokens::identity() const {
  return {
      {"kind", "synthetic"},  {"task", "language_model"}, {"generator", 1},    {"seed", seed_}, {"seq_len", info_.sampleShape[0]},
      {"vocab", info_.vocab}, {"noise", noise_},          {"size", info_.size}};
}

}  // namespace ts::data

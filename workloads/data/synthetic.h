#pragma once
// Synthetic data that a model can learn, generated on demand from (seed, sample index): nothing stored,
// nothing read, any size. Loss must fall on it, so a training benchmark also checks that training works.
#include <cstdint>
#include <vector>

#include "workloads/data/dataset.h"

namespace ts::data {

// Classification. Inputs are approximately N(0, 1) (counter_rng.h), one stream per sample index; the
// label is the argmax of a fixed random linear teacher, W·x, whose rows have unit norm so that every
// class is about equally likely. For image shapes [C, H, W] the teacher is constant over each channel
// (kTeacherGrid = 1 region per side): the label depends on the channel means, which a CNN that ends in
// global average pooling can represent exactly. (With a 4x4 grid of regions the tiny ResNet learned
// nothing in 100 steps: its global pooling cannot tell where in the image a region is.) A linear
// teacher of what each model can see lets accuracy approach 100% and the loss keep falling.
class SyntheticClassification : public Dataset {
 public:
  SyntheticClassification(std::uint64_t seed, std::vector<std::int64_t> sampleShape, int classes, std::int64_t size);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;
  // The teacher's label for an input of sampleElements() floats (what sample() gives as the target).
  int teacherLabel(const float* x) const;

 private:
  DataInfo info_;
  std::uint64_t seed_;
  std::int64_t pooled_ = 0;           // features the teacher reads (regions on images, else inputs)
  std::vector<std::int32_t> poolOf_;  // [D]: the pooled feature each input adds to
  std::vector<float> teacher_;        // [classes, pooled_]
};

// Language modelling. Each sequence starts at a random token; every next token is successor(previous)
// with probability 1 - noise and a uniformly random token otherwise, where successor is a fixed random
// map of the vocabulary. A model that learns the map reaches a loss near the entropy of the noise
// (about 0.65 nats at vocabulary 256 and noise 0.1) from ln(vocab) at the start.
class SyntheticTokens : public Dataset {
 public:
  SyntheticTokens(std::uint64_t seed, std::int64_t seqLen, int vocab, std::int64_t size, double noise = 0.1);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;
  int successor(int token) const { return successor_[static_cast<std::size_t>(token)]; }
  double noise() const { return noise_; }

 private:
  DataInfo info_;
  std::uint64_t seed_;
  double noise_;
  std::vector<std::int32_t> successor_;
};

}  // namespace ts::data

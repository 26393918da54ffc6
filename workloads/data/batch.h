#pragma once
// One batch on the host, as a data source produces it: the inputs, the targets and their shapes.
//   classification:     features [B, sample shape...] float32, targets [B] int32 class indices;
//   language modelling: tokens [B, T] int32, targets [B, T] int32 (each the token that follows).
#include <cstdint>
#include <memory>
#include <vector>

namespace ts::data {

enum class Task { kClassification, kLanguageModel };

struct Batch {
  std::int64_t step = -1;  // the global training step this batch belongs to
  Task task = Task::kClassification;
  std::vector<std::int64_t> inputShape;  // [B, ...]: the shape of `features` or of `tokens`
  std::vector<float> features;           // classification inputs (empty for language modelling)
  std::vector<std::int32_t> tokens;      // language-model inputs (empty for classification)
  std::vector<std::int32_t> targets;     // [B] or [B, T]
  std::vector<std::int64_t> targetShape;
  std::vector<std::int64_t> sampleIndices;  // the dataset index of each row: which samples these are
  // Row j's place in the run's sequence of training samples (step * global batch + the row's place in the
  // global batch), the same whichever rank or micro-batch holds it: what per-sample randomness is keyed by.
  std::int64_t firstPosition = 0;
  // Filled by the Prefetcher's prepare hook in the loader thread: the batch's device copy and the event
  // marking its upload done (wl::BatchStager). Opaque here; the host vectors above stay valid beside it.
  // A slice shares it, starting at row `stagedRow` of the staged batch.
  std::shared_ptr<void> staged;
  std::int64_t stagedRow = 0;

  std::int64_t size() const { return inputShape.empty() ? 0 : inputShape[0]; }
  bool hasTokens() const { return task == Task::kLanguageModel; }
  // Rows [begin, end) as a batch of their own (micro-batches for gradient accumulation and pipelines),
  // sharing the staged device copy.
  Batch slice(std::int64_t begin, std::int64_t end) const;
};

}  // namespace ts::data

#pragma once
// The shape of the MLP and the CNN: float inputs, a list of layers, logits, cross-entropy against class
// labels. (The transformer adds embeddings in front and predicts every position.)
#include "workloads/models/model.h"

namespace ts::wl {

class SequentialClassifier : public Model {
 public:
  const Tensor& embed(const data::Batch& batch, StepContext& ctx) override;
  void embedBackward(const Tensor&, StepContext&) override {}
  std::int64_t itemsPerMicroBatch() const override { return batch_; }
  ItemKind itemKind() const override { return ItemKind::kSamples; }

 protected:
  SequentialClassifier(ModelConfig config, std::int64_t batch, Device& device);
  void finish();  // after the subclass added its layers: the loss over the last layer's output
  std::int64_t batch_;
  Tensor input_;
};

}  // namespace ts::wl

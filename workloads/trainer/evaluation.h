#pragma once
// Evaluation on the held-out split (--eval-every): the split in batches of what the model is built for on every rank,
// how many of them each evaluation reads, and one evaluation of the model as it is.
#include <cstdint>
#include <memory>

#include "workloads/data/data_source.h"
#include "workloads/device.h"
#include "workloads/trainer/model_on_mesh.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {

// One evaluation on the held-out split: every rank its shard of each batch, the figures the data-parallel
// group's (the same on every rank, so that all decide alike whether a target is reached).
struct EvalResult {
  std::int64_t step = 0;   // optimizer steps trained before it
  double loss = 0;         // mean cross-entropy per sample (classification) or per token (language model)
  double accuracy = 0;     // top-1, of samples or of next tokens
  double perplexity = 0;   // language model: exp(loss); 0 for a classifier
  std::int64_t items = 0;  // samples or tokens evaluated, all ranks
  double seconds = 0;      // this rank's wall time for it (kept out of every step time)
};

class Evaluation {
 public:
  // The held-out split of the training data `training` describes, in batches of dataShards x microBatch samples (UsageError
  // when it has fewer than one).
  Evaluation(const data::DataOptions& training, const TrainOptions& o, std::int64_t microBatch, int dataShards);
  // Evaluates m as it is now after `step` optimizer steps (collective); dataParallel ranks evaluate alike.
  EvalResult run(ModelOnMesh& m, Device& device, int dataParallel, std::int64_t step);
  std::int64_t batches() const { return batches_; }
  std::int64_t samples() const { return samples_; }  // each evaluation's: its batches x their global batch
  const data::DataInfo& info() const { return source_->info(); }

 private:
  std::unique_ptr<data::DataSource> source_;
  std::int64_t batches_ = 0, samples_ = 0;
};

// Whether an evaluation reached --target-accuracy / --target-loss (false without one).
bool reachedTarget(const TrainOptions& o, const EvalResult& e);

}  // namespace ts::wl

#pragma once
// The training data of one rank: its shard of every global batch, and the loader thread that prepares the batches
// ahead of the steps (on a GPU, uploaded too).
#include <cstdint>
#include <memory>

#include "workloads/batch_staging.h"
#include "workloads/data/data_source.h"
#include "workloads/data/prefetcher.h"
#include "workloads/device.h"
#include "workloads/models/model.h"
#include "workloads/parallel/mesh.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {

// Declared in the order they are built (the loader calls the stager, and reads the source, until it is destroyed).
struct TrainingData {
  std::unique_ptr<data::DataSource> source;
  std::unique_ptr<BatchStager> stager;  // CUDA: the loader thread's uploads (before the loader, which calls it)
  std::unique_ptr<data::Prefetcher> loader;
};

// What this rank reads: the options' data in global batches, its shard among the ranks that train.
data::DataOptions trainingDataOptions(const TrainOptions& o, const Mesh& mesh, const ModelConfig& config);
// Starts the loader thread at `firstStep` (the batches up to o.steps).
void startLoader(TrainingData& data, Device& device, std::int64_t firstStep, std::int64_t steps);

}  // namespace ts::wl

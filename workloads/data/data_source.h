#pragma once
// The training data: a dataset, visited in a seeded per-epoch order, cut into global batches, of which
// each data-parallel rank takes its contiguous part.
//
// A batch is a pure function of (seed, step, rank, ranks, global batch): resuming is "continue at step
// s", reruns are bitwise identical, and no loader state needs saving. Row j of rank r at step s is the
// sample at global position s·G + r·(G/w) + j (see sample_order.h), so the ranks' batches, concatenated
// in rank order, are exactly the 1-rank batch of the same step: data parallelism over w ranks with
// global batch G trains on the same samples as one rank does. For the same reason a checkpoint can be
// resumed on another number of ranks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/data/augment.h"
#include "workloads/data/batch.h"
#include "workloads/data/dataset.h"
#include "workloads/data/sample_order.h"

namespace ts::data {

// This process's place among the data-parallel ranks. Ranks that share data (tensor- and
// pipeline-parallel peers) have the same Shard.
struct Shard {
  int rank = 0;
  int count = 1;
};

class DataSource {
 public:
  // globalBatch must divide evenly among shard.count ranks (UsageError otherwise).
  DataSource(std::shared_ptr<const Dataset> dataset, std::uint64_t seed, std::int64_t globalBatch, Shard shard = {},
             Augment augment = Augment::kNone);

  // This rank's rows of global step `step` (≥ 0). Thread-safe; the same bytes for the same step every time.
  Batch batch(std::int64_t step) const;
  // The same data and order for another rank: shares the dataset (loaded once).
  DataSource forShard(Shard shard) const;

  const DataInfo& info() const { return dataset_->info(); }
  const Dataset& dataset() const { return *dataset_; }
  std::uint64_t seed() const { return seed_; }
  std::int64_t globalBatch() const { return globalBatch_; }
  std::int64_t localBatch() const { return globalBatch_ / shard_.count; }
  Shard shard() const { return shard_; }
  // Epochs completed after `steps` steps (fractional): samples seen / dataset size.
  double epochsAfter(std::int64_t steps) const;
  // The dataset's identity plus the seed and the global batch — not the shard, which does not change
  // the global batches. Equal identities mean equal global batches at every step.
  nlohmann::json identity() const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::uint64_t seed_;
  std::int64_t globalBatch_;
  Shard shard_;
  SampleOrder order_;
  Augment augment_;
};

// What the run asks of its data; makeDataSource reads the fields that matter to the spec given.
struct DataOptions {
  std::string spec = "synthetic";  // synthetic | mnist:DIR | cifar10:DIR | text:FILE
  Split split = Split::kTrain;
  Augment augment = Augment::kNone;   // images, training split only (augment.h)
  Task task = Task::kClassification;  // what the model trains on: decides what `synthetic` generates
  std::uint64_t seed = 0;
  std::int64_t globalBatch = 32;
  Shard shard;
  // Synthetic classification: the input shape per sample ([D] for an MLP, [C, H, W] for a CNN) and classes.
  std::vector<std::int64_t> sampleShape = {784};
  int classes = 10;
  // Language modelling: tokens per sequence (every source) and the vocabulary of synthetic tokens
  // (text is bytes: always 256).
  std::int64_t seqLen = 128;
  int vocab = 256;
  // Synthetic data: samples per epoch (each generated on demand, none stored); the held-out split is the
  // next tenth of that (at least one sample).
  std::int64_t syntheticSize = 1 << 16;
};

// Every check of the spec that reads no data (UsageError, the line makeDataSource would give): a known source with
// the argument it needs, suiting the task, and each file it would read for the split a regular file this process may
// read. A suite checks its train steps' data with it before its first step runs.
void checkDataSource(const DataOptions& options);

// Parses the spec and loads the data, checking it (UsageError, one line naming the spec, the file and
// what is wrong with it). mnist and cifar10 bring their own sample shape and 10 classes; the model is
// built from info() afterwards.
DataSource makeDataSource(const DataOptions& options);

}  // namespace ts::data

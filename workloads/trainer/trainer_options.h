#pragma once
// What a Trainer is asked to do (TrainOptions, from `trainscope train`'s flags) and the checks of it that read no data
// and allocate nothing; the model configuration the options name, which the checks and the build share.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "workloads/data/augment.h"
#include "workloads/device_spec.h"
#include "workloads/models/model.h"
#include "workloads/optim/optimizer.h"
#include "workloads/optim/schedule.h"
#include "workloads/parallel/layout.h"

namespace ts::wl {

struct TrainOptions {
  ModelKind model = ModelKind::kMlp;
  std::string preset = "tiny";
  std::vector<std::string> overrides;  // key=value model fields
  std::int64_t steps = 100;
  std::int64_t batch = 32;        // global batch per optimizer step (samples or sequences)
  std::int64_t microBatches = 1;  // gradient accumulation: the batch is cut into this many micro-batches
  DeviceSpec device;
  int ranksOnHost = 1;                        // this run's processes on this host, which share its memory (bench/train sets it)
  Precision precision = Precision::kFloat32;  // or bfloat16 / float16 mixed precision (emulated on the CPU); tf32 on CUDA
  double lossScale = 65536.0;                 // float16: the initial dynamic loss scale
  int lossScaleInterval = 2000;               // float16: good steps before the scale doubles
  OptimizerOptions optimizer;
  Schedule schedule;
  double clipNorm = 0;  // clip the global gradient norm to this (0: off)
  std::uint64_t seed = 1234;
  std::string data = "synthetic";
  std::int64_t syntheticSize = 1 << 16;
  std::string checkpointDir;
  std::int64_t checkpointEvery = 0;  // steps between checkpoints (0: only at the end when a directory is given)
  bool resume = false;
  bool checkpointAsync = false;   // snapshot to host memory, write in the background, commit at the next save or the end
  LayoutOptions layout;           // the parallel layout (resolved against the world by the caller)
  std::string memoryLimit = "0";  // per rank, as given ("6G"): what the device may hand out at once ("0": no limit)
  // Evaluation on the held-out split: every evalEvery steps (0: never) over evalBatches batches of
  // microBatchSize() samples per rank (0: the whole split once); the run stops early once the metric reaches
  // a target (accuracy at or above targetAccuracy, loss at or below targetLoss; 0: none).
  std::int64_t evalEvery = 0, evalBatches = 0;
  data::Augment augment = data::Augment::kNone;  // --augment: the training images' random crop and flip
  double dropout = 0;                            // --dropout: the drop probability of the models' dropout layers (0: none)
  Recompute recompute = Recompute::kNone;        // --recompute: activations recomputed in the backward (layers/recompute.h)
  // A mixture-of-experts model's (layers/moe.h): --capacity-factor (<= 0: no limit; Switch's training default 1.25) and
  // --aux-loss-coef (Switch's and Megatron's 0.01); routerSkew is the TRAINSCOPE_FAULT=router test hook's (no option).
  double capacityFactor = 1.25, auxLossCoef = 0.01, routerSkew = 0;
  double targetAccuracy = 0, targetLoss = 0;
  // The options as given, as the option table records them (bench/train/train_command.cpp): the first half of
  // Trainer::config, the record's and each checkpoint's.
  nlohmann::json given = nlohmann::json::object();
};

// Every check that reads no data and allocates nothing (flags, preset, overrides, optimizer, schedule; the model's
// size against the host's memory on the CPU; the data's spec and that each file it names is a readable regular
// file): UsageError.
void validateTrainOptions(const TrainOptions& options);
// --sync-bn auto, decided: on where it makes data parallel train as one process does (the cnn, dp > 1, the
// CPU); on and off stay. The record's layout says which it was.
SyncBatchNorm resolveSyncBatchNorm(const TrainOptions& options, int dp);

// The preset with the overrides and the seed (the data adds input shape and classes later).
ModelConfig modelConfigOf(const TrainOptions& o);
// The samples synthetic data makes for a classifier (mnist and cifar10 bring their own).
std::vector<std::int64_t> syntheticSampleShape(ModelKind kind);
// The layout's share of the model one rank holds at the least (ModelShare).
ModelShare modelShareOf(const LayoutOptions& layout);
// A model built on the CPU holds its parameters and gradients in host memory: one whose share a rank cannot hold there
// is refused before any of it is allocated (before, only --tp divided the count, so a model that --pp or --zero 3 would
// have sharded was refused). A GPU's allocations are counted and refused one by one; its memory is not known before
// it is opened.
void checkFitsTheHost(const ModelConfig& config, const DeviceSpec& device, const LayoutOptions& layout, int ranksOnHost);

}  // namespace ts::wl

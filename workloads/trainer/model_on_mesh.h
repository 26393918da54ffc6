#pragma once
// The model as this rank trains it in the layout: its part (all of it, or a pipeline stage's), the groups that
// connect it to the other ranks (tensor parallel, SyncBatchNorm, the gradient sync), the optimizer, mixed precision's
// master weights and loss scaler, and what the layout's formula says their states take per rank.
#include <cstdint>
#include <memory>
#include <optional>

#include "workloads/data/data_source.h"
#include "workloads/device.h"
#include "workloads/memory_account.h"
#include "workloads/mixed_precision.h"
#include "workloads/models/model.h"
#include "workloads/optim/optimizer.h"
#include "workloads/parallel/async_ps.h"
#include "workloads/parallel/expert_parallel.h"
#include "workloads/parallel/gradient_sync.h"
#include "workloads/parallel/mesh.h"
#include "workloads/parallel/pipeline.h"
#include "workloads/parallel/sync_batchnorm.h"
#include "workloads/parallel/tensor_parallel.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {

// The advice of a --memory-limit line: for activations, the options that hold fewer of them; otherwise the
// layouts that hold less per rank than this one.
std::string saveMemoryAdvice(const LayoutOptions& layout, std::optional<MemoryKind> short_ = std::nullopt);

// Destroyed in reverse order of declaration: the sync (its buckets are in the model's arena) first, the model last.
struct ModelOnMesh {
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<MasterWeights> masters;      // bfloat16 / float16
  std::unique_ptr<LossScaler> scaler;          // float16
  std::unique_ptr<Pipeline> pipeline;          // pp > 1
  std::unique_ptr<TensorParallelGroup> tp;     // tp > 1
  std::unique_ptr<ExpertParallelGroup> ep;     // ep > 1
  std::unique_ptr<SyncBatchNormGroup> syncBn;  // --sync-bn on and dp > 1
  ModelPart part;                              // the parameters this rank trains: all, or its pipeline stage's
  ModelStateBytes formula;                     // the layout's model states per rank, by the formulas
  std::unique_ptr<GradientSync> sync;          // after the model: it holds buckets in the model's arena
  AsyncPsSync* asyncPs = nullptr;              // sync, under --sync ps-async
};

// The model's input shape and classes from the data (a classifier's), checked against the data and, on the CPU,
// against the host's memory.
void completeModelConfig(ModelConfig& config, const TrainOptions& o, const LayoutOptions& layout, const data::DataInfo& info);
// Builds into m (in place: its parts hold references to each other, and to o.layout and o.schedule, which must outlive
// them) the model of `config` for micro-batches of microBatch samples on `device`, placed in the layout of `mesh`
// (UsageError when the layout's model states exceed --memory-limit). `source` gives a pipeline its buffers' shapes.
void buildModelOnMesh(ModelOnMesh& m, const TrainOptions& o, const Mesh& mesh, Device& device, const data::DataSource& source,
                      const ModelConfig& config, std::int64_t microBatch, double commTimeoutS);

// The pieces of buildModelOnMesh that a plan of the layout (`train --plan`) calls for a rank it does not run, so that
// the plan is the trainer's own placement:
// this rank's tensor-parallel slice;
TensorParallel tensorParallelOf(const Mesh& mesh);
// where the model is cut for this rank's pipeline stage (none without --pp), from one forward of a probe of the whole
// model built deferred on `device` (pipeline.h);
std::optional<PipelineCut> pipelineCutOf(const Mesh& mesh, Device& device, const data::DataSource& source,
                                         const ModelConfig& config, std::int64_t microBatch);
// the config this rank's model is built from: its stage's activation buffers alone (BuiltLayers), its own experts
// (MoeSettings::ep);
ModelConfig placedConfigOf(ModelConfig config, const Mesh& mesh, const std::optional<PipelineCut>& cut);
// what the layout's formula says this rank's model states take, for the parameters of `part` (o.layout: the resolved
// layout, as the mesh's).
ModelStateBytes modelStatesOf(const ModelPart& part, const TrainOptions& o, const Mesh& mesh);

}  // namespace ts::wl

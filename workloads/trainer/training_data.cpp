#include "workloads/trainer/training_data.h"

#include <algorithm>

namespace ts::wl {

data::DataOptions trainingDataOptions(const TrainOptions& o, const Mesh& mesh, const ModelConfig& config) {
  const LayoutOptions& layout = o.layout;
  data::DataOptions d;
  d.spec = o.data;
  const bool language = o.model == ModelKind::kTransformer;
  d.task = language ? data::Task::kLanguageModel : data::Task::kClassification;
  d.seed = o.seed;
  d.globalBatch = o.batch;
  // Split over the ranks that train (a dedicated ps-async server reads shard 0 and never trains on it).
  const int dataIndex = mesh.dataIndex();
  d.shard = {dataIndex < layout.workers() ? dataIndex : 0, layout.workers()};
  d.syntheticSize = o.syntheticSize;
  d.augment = o.augment;
  if (!language) d.sampleShape = syntheticSampleShape(o.model);
  d.seqLen = config.seqLen;
  d.vocab = static_cast<int>(std::min<std::int64_t>(config.vocab, 1 << 20));
  return d;
}

void startLoader(TrainingData& data, Device& device, std::int64_t firstStep, std::int64_t steps) {
  // The loader thread produces batches two steps ahead and, on a GPU, uploads them (pinned memory, a side
  // stream): the step's data phase is then only the wait for a batch that is not ready yet.
  constexpr int kPrefetchDepth = 2;
  data.loader = std::make_unique<data::Prefetcher>(*data.source, firstStep, kPrefetchDepth,
                                                   stagingHook(device, kPrefetchDepth, data.stager), steps);
}

}  // namespace ts::wl

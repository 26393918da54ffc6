#include "bench/train/train_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/results/result_writer.h"
#include "bench/run/run_session.h"
#include "comm/bootstrap.h"
#include "workloads/trainer.h"
#include "workloads/trainer/model_on_mesh.h"
#include "workloads/trainer/train_step_plan.h"
#include "workloads/trainer/training_data.h"

namespace ts {
namespace {

using wl::MemoryKind;

std::size_t inUse(MemoryKind kind) { return wl::Device::hostCpu().memory().inUseOf(kind); }

struct LayerPlan {
  std::size_t index = 0;
  double forwardFlops = 0;  // one forward of one micro-batch
  std::uint64_t parameters = 0;
};

// What one (tensor-parallel slice, expert-parallel rank, pipeline stage) holds and computes: the replicas of that
// triple share it.
struct StagePlan {
  int stage = 0, stages = 1;
  wl::StageRange range;
  std::vector<LayerPlan> layers;
  std::uint64_t leadingParameters = 0;  // the embeddings (the first stage's)
  std::uint64_t parameters = 0;         // the part's: the leading ones and its layers'
  double forwardFlops = 0;              // its layers', one micro-batch
  std::size_t activationBytes = 0;      // its model's activation buffers (its scratch set included)
  std::size_t pipelineInputBytes = 0;   // the inputs a stage keeps for recomputation (activations)
  std::size_t pipelineCommBytes = 0;    // the transfers' buffers (comm buffers)
};

struct RankPlan {
  int rank = 0;
  std::vector<wl::MeshAxis> axes;
  const StagePlan* stage = nullptr;
  wl::ModelStateBytes formula;
  double flopsPerStep = 0;
  nlohmann::json schedule;
  std::optional<wl::AsyncPsFacts> psAsync;  // --sync ps-async: what its steady state is predicted from
  std::size_t opsPerWindow = 0;
  int windowSteps = 1;
  double modelStateBytes() const { return formula.total() + formula.inFlightParameters + formula.inFlightGradients; }
  double activationBytes() const { return static_cast<double>(stage->activationBytes + stage->pipelineInputBytes); }
  double totalBytes() const { return modelStateBytes() + activationBytes() + static_cast<double>(stage->pipelineCommBytes); }
};

struct Plan {
  wl::TrainOptions train;  // its layout the resolved one
  wl::ModelConfig config;
  std::int64_t microBatch = 0;
  std::uint64_t limit = 0;
  std::map<std::tuple<int, int, int>, StagePlan> stages;  // by (tp coordinate, ep coordinate, pp stage)
  std::vector<RankPlan> ranks;
};

// Builds the stage of `mesh`'s rank as the trainer places it (model_on_mesh.cpp) and counts what it holds; calls
// `each` with its part, its first layer and its cut while its model is alive (the model states' formula and the
// step's schedule need the part's parameters and layers).
template <class Each>
StagePlan planStage(const Plan& p, const wl::Mesh& mesh, const data::DataSource& source, Each&& each) {
  wl::Device& cpu = wl::Device::hostCpu();
  const std::optional<wl::PipelineCut> cut = wl::pipelineCutOf(mesh, cpu, source, p.config, p.microBatch);
  const std::size_t before = inUse(MemoryKind::kActivations);
  const std::unique_ptr<wl::Model> model = wl::makeModel(wl::placedConfigOf(p.config, mesh, cut), p.microBatch, cpu,
                                                         wl::tensorParallelOf(mesh), wl::ParamStorage::kDeferred);
  StagePlan s;
  s.activationBytes = inUse(MemoryKind::kActivations) - before;
  s.stages = mesh.size(wl::GroupKind::kPp);
  s.range = cut ? cut->range() : wl::StageRange{0, model->layerCount()};
  s.stage = cut ? cut->stage : 0;
  if (cut) {
    const std::size_t acts = inUse(MemoryKind::kActivations), comm = inUse(MemoryKind::kCommBuffers);
    [[maybe_unused]] const wl::PipelineBuffers buffers =
        wl::allocatePipelineBuffers(model->arena(), *cut, p.train.layout.schedule, static_cast<int>(p.train.microBatches));
    s.pipelineInputBytes = inUse(MemoryKind::kActivations) - acts;
    s.pipelineCommBytes = inUse(MemoryKind::kCommBuffers) - comm;
  }
  const wl::ModelPart part = wl::stagePart(*model, s.range, s.stage == 0);
  s.leadingParameters = wl::elementsOf(part.leading);
  s.parameters = wl::elementsOf(part.params);
  for (std::size_t i = 0; i < part.layers.size(); ++i) {
    std::vector<wl::Param*> ps;
    part.layers[i]->params(ps);
    s.layers.push_back({s.range.from + i, part.layers[i]->forwardFlops(), wl::elementsOf(ps)});
    s.forwardFlops += part.layers[i]->forwardFlops();
  }
  each(part, s.range.from, cut ? &*cut : nullptr);
  return s;
}

// The rank's one step, as its components would issue it (workloads/trainer/train_step_plan.h).
void scheduleOf(RankPlan& r, const wl::TrainOptions& o, const wl::Mesh& mesh, const wl::ModelPart& part, std::size_t first,
                const wl::PipelineCut* cut) {
  r.psAsync = wl::asyncPsFactsOf(mesh, part);
  const wl::StepPlan step = wl::planTrainStep(o, mesh, part, first, cut);
  r.schedule = {{"events", step.events()}, {"steps", step.steps()}};
  r.opsPerWindow = step.issues();
  r.windowSteps = step.steps();
}

Plan makePlan(const TrainRunOptions& o) {
  Plan p;
  p.train = o.train;
  p.train.device = wl::parseDeviceSpec(o.device);
  const int ranks = static_cast<int>(o.plan);
  p.train.layout = wl::resolveLayout(o.train.layout, ranks);
  p.train.layout.syncBn = wl::resolveSyncBatchNorm(p.train, p.train.layout.dataShards());
  p.microBatch = wl::microBatchSizeOf(p.train, p.train.layout);
  p.limit = parseBytes(o.train.memoryLimit, "--memory-limit");
  p.config = wl::modelConfigOf(p.train);
  const wl::Mesh first(p.train.layout, 0);
  const data::DataSource source = data::makeDataSource(wl::trainingDataOptions(p.train, first, p.config));
  wl::completeModelConfig(p.config, p.train, p.train.layout, source.info());

  std::vector<wl::Mesh> meshes;
  for (int r = 0; r < ranks; ++r) meshes.emplace_back(p.train.layout, r);
  p.ranks.resize(static_cast<std::size_t>(ranks));
  const auto key = [](const wl::Mesh& m) {  // an expert-parallel rank holds its own experts
    return std::tuple{m.coordinate(wl::GroupKind::kTp), m.coordinate(wl::kExpertAxes), m.coordinate(wl::GroupKind::kPp)};
  };
  for (const wl::Mesh& mesh : meshes) {
    if (p.stages.count(key(mesh))) continue;
    // Every rank of this triple gets its formula while its model is alive: its ps role changes only that.
    StagePlan s = planStage(p, mesh, source, [&](const wl::ModelPart& part, std::size_t first, const wl::PipelineCut* cut) {
      for (const wl::Mesh& m : meshes)
        if (key(m) == key(mesh)) {
          RankPlan& r = p.ranks[static_cast<std::size_t>(m.rank())];
          r.formula = wl::modelStatesOf(part, p.train, m);
          scheduleOf(r, p.train, m, part, first, cut);
        }
    });
    p.stages.emplace(key(mesh), std::move(s));
  }
  for (const wl::Mesh& mesh : meshes) {
    RankPlan& r = p.ranks[static_cast<std::size_t>(mesh.rank())];
    r.rank = mesh.rank();
    r.axes = mesh.axes();
    r.stage = &p.stages.at(key(mesh));
    // A training step is 3 forwards of each micro-batch (trainer.cpp's convention); ps-async's dedicated servers
    // (the replicas past the workers) train none.
    const bool trains = mesh.replicaIndex() < p.train.layout.workers();
    r.flopsPerStep = trains ? 3.0 * r.stage->forwardFlops * static_cast<double>(p.train.microBatches) : 0;
  }
  return p;
}

std::string coordinatesOf(const std::vector<wl::MeshAxis>& axes) {
  std::string out;
  for (const wl::MeshAxis& a : axes)
    if (a.size > 1) out += fmt::format("{}{}{}", out.empty() ? "" : " ", a.name, a.coordinate);
  return out.empty() ? "-" : out;
}

std::string layersOf(const StagePlan& s) { return fmt::format("{}-{}", s.range.from, s.range.to - 1); }

double mib(double bytes) { return bytes / (1 << 20); }

// One line for the schedules (each rank's is in its record): how many ops a step issues, or why there is none.
void printScheduleLine(const Plan& p) {
  const RankPlan& first = p.ranks.front();
  if (const auto& ps = first.psAsync) {
    std::printf(
        "# schedule: --sync ps-async: each rank's own compute (its workers' forwards and backwards, its servers' updates), "
        "no ops: its ranks share no step, each worker sending %.1f KiB to each of %d server(s) per step, up to %d step(s) "
        "ahead of the updates it uses (predict train models the steady state)\n",
        static_cast<double>(ps->shardBytes) / 1024, ps->servers, ps->staleness);
    return;
  }
  const auto [fewest, most] = std::minmax_element(
      p.ranks.begin(), p.ranks.end(), [](const RankPlan& a, const RankPlan& b) { return a.opsPerWindow < b.opsPerWindow; });
  const std::string range = fewest->opsPerWindow == most->opsPerWindow
                                ? fmt::format("{}", most->opsPerWindow)
                                : fmt::format("{}-{}", fewest->opsPerWindow, most->opsPerWindow);
  // Every rank's window is its sync's, the same on all.
  const std::string per = first.windowSteps == 1 ? "step" : fmt::format("window of {} steps (they differ)", first.windowSteps);
  std::printf(
      "# schedule: %s communication ops per %s per rank, each issued and waited for where the trainer does "
      "(with --json: every rank's step in its train_plan record)\n",
      range.c_str(), per.c_str());
}

void printPlan(const Plan& p) {
  std::printf("# plan of %s at %zu ranks (%s %s, micro-batch %lld x %lld): no training, no communicator\n",
              p.train.layout.name().c_str(), p.ranks.size(), std::string(nameOf(p.config.kind)).c_str(), p.config.preset.c_str(),
              static_cast<long long>(p.microBatch), static_cast<long long>(p.train.microBatches));
  std::printf("%5s  %-18s %8s %12s %11s %13s %15s %10s%s\n", "rank", "coordinates", "layers", "parameters", "GFLOP/step",
              "states MiB", "activations MiB", "total MiB", p.limit ? "  fits" : "");
  for (const RankPlan& r : p.ranks)
    std::printf("%5d  %-18s %8s %12llu %11.3f %13.2f %15.2f %10.2f%s\n", r.rank, coordinatesOf(r.axes).c_str(),
                layersOf(*r.stage).c_str(), static_cast<unsigned long long>(r.stage->parameters), r.flopsPerStep / 1e9,
                mib(r.modelStateBytes()), mib(r.activationBytes()), mib(r.totalBytes()),
                p.limit ? (r.totalBytes() <= static_cast<double>(p.limit) ? "  yes" : "  no") : "");
  std::printf(
      "# states: the layout's formula with what it holds in flight at most; activations: the stage model's buffers and "
      "the pipeline's kept inputs; total adds the pipeline's transfer buffers\n");
  printScheduleLine(p);
}

nlohmann::json recordOf(const Plan& p, const RankPlan& r) {
  nlohmann::json coordinates = nlohmann::json::object();
  for (const wl::MeshAxis& a : r.axes) coordinates[wl::coordinateField(a)] = a.coordinate;
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerPlan& l : r.stage->layers)
    layers.push_back({{"index", l.index}, {"forward_flops", l.forwardFlops}, {"parameters", l.parameters}});
  nlohmann::json record = {
      {"kind", "train_plan"},
      {"ranks", p.ranks.size()},
      {"rank", r.rank},
      {"layout", p.train.layout.name()},
      {"model", nameOf(p.config.kind)},
      {"preset", p.config.preset},
      {"experts", p.config.moe.experts},
      {"coordinates", coordinates},
      {"stage", r.stage->stage},
      {"stages", r.stage->stages},
      {"layers_from", r.stage->range.from},
      {"layers_to", r.stage->range.to},
      {"layers", layers},
      {"micro_batch", p.microBatch},
      {"micro_batches", p.train.microBatches},
      {"parameters", r.stage->parameters},
      {"leading_parameters", r.stage->leadingParameters},
      {"forward_flops_per_micro_batch", r.stage->forwardFlops},
      {"flops_per_step", r.flopsPerStep},
      {"schedule", r.schedule},
      {"formula_bytes", wl::toJson(r.formula)},
      {"activation_bytes", r.activationBytes()},
      {"pipeline_comm_buffer_bytes", r.stage->pipelineCommBytes},
      {"total_bytes", r.totalBytes()},
      {"memory_limit_bytes", p.limit ? nlohmann::json(p.limit) : nlohmann::json(nullptr)},
      {"fits", p.limit ? nlohmann::json(r.totalBytes() <= static_cast<double>(p.limit)) : nlohmann::json(nullptr)}};
  if (const auto& ps = r.psAsync)
    record["ps_async"] = {{"workers", ps->workers},
                          {"servers", ps->servers},
                          {"dedicated", ps->dedicated},
                          {"staleness", ps->staleness},
                          {"shard_bytes", ps->shardBytes},
                          {"shard", ps->shard >= 0 ? nlohmann::json(ps->shard) : nlohmann::json(nullptr)},
                          {"shard_elements", ps->shardElements},
                          {"worker", ps->worker}};
  return record;
}

}  // namespace

int runTrainPlan(const TrainRunOptions& o, const std::vector<std::string>& argv) {
  if (launchedByMpi())
    throw UsageError(fmt::format("--plan {} places every rank in one process: start it without mpirun", o.plan));
  if (!o.transports.empty()) throw UsageError("--plan with --transports: a plan runs nothing on any transport");
  checkTrainRun(o);
  const Plan plan = makePlan(o);
  printPlan(plan);
  if (o.jsonPath.empty()) return 0;
  auto session = RunSession::open(BootstrapKind::kAuto, false, "train", argv, toJson(o), o.jsonPath, o.timeoutS);
  for (const RankPlan& r : plan.ranks) session->context().writer->add(recordOf(plan, r));
  session->finish();
  return 0;
}

}  // namespace ts

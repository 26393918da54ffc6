// `trainscope train`: builds the trainer on this rank's place in the mesh, measures the GEMM ceiling MFU
// is against, trains (bench/train/train_loop.h), gathers every rank's steps and writes one `train` record
// (bench/train/train_record.h), which the console summarises (bench/train/train_console.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "base/error.h"
#include "base/host_name.h"
#include "base/json_text.h"
#include "base/user_paths.h"
#include "bench/failures/activity.h"
#include "bench/failures/agreement.h"
#include "bench/failures/fault_injection.h"
#include "bench/failures/watchdog.h"
#include "bench/kernels/ceilings.h"
#include "bench/results/result_writer.h"
#include "bench/run/run_session.h"
#include "bench/telemetry/compute_clock.h"
#include "bench/train/parameter_norms.h"
#include "bench/train/train_console.h"
#include "bench/train/train_loop.h"
#include "bench/train/train_mfu.h"
#include "bench/train/train_options.h"
#include "bench/train/train_record.h"
#include "comm/bootstrap.h"
#include "comm/communicator.h"

namespace ts {

namespace {

// The record's MFU block: against the ceiling this run measured (when it did) and, for a GPU the table
// knows, the datasheet peak in the run's precision at the SM clock read now.
nlohmann::json mfuFor(wl::Trainer& trainer, Precision precision, Precision gemmPrecision,
                      const std::optional<CeilingSet>& ceilings, double perDevice) {
  const nlohmann::json clock =
      computeClockMhz(trainer.device().ordinal());  // the SM clock on a GPU, the CPU frequency where known
  std::optional<MeasuredPeak> measured;
  if (ceilings && ceilings->computeTflops() > 0)
    measured = MeasuredPeak{ceilings->computeTflops(),    gemmPrecision,
                            ceilings->computeSource(),    ceilings->computeClockMhz(),
                            ceilings->computeRechecked(), ceilings->likelyCause(CeilingKind::kCompute, MemoryLevel::kDram)};
  std::optional<DatasheetPeak> datasheet;
  if (trainer.device().cuda())
    if (const auto p = datasheetPeak(trainer.device().name(), precision)) datasheet = DatasheetPeak{*p, precision};
  return mfuBlock(perDevice, measured, datasheet, clock);
}

void checkWarmup(const TrainRunOptions& o, const wl::Trainer& trainer) {
  checkWarmupSteps(o.warmupSteps, o.train.steps - trainer.firstStep());
}

// Process 0 measures the GEMM ceiling MFU is against, in the precision the run's GEMMs take: the run's on
// a GPU, float32 on the CPU (which rounds 16-bit formats around float32 GEMMs).
void measureGemmCeiling(std::optional<CeilingSet>& ceilings, RunContext& ctx, wl::Trainer& trainer,
                        const std::optional<Fault>& fault, Precision gemmPrecision) {
  const bool cuda = trainer.device().cuda();
  ceilings.emplace(cuda ? cudaGemmCeilingSpecs(gemmPrecision, trainer.device().ordinal()) : cpuGemmCeilingSpecs(),
                   CeilingOptions{writerSink(ctx.writer), ctx.step, plantedCeilingScale(fault, ctx.boot.rank()), !cuda});
  std::printf("%s\n", ceilings->consoleLine().c_str());
}

// What every rank's steps came to, gathered while every rank still answers (the steps completed);
// after a failure, this rank's own step times.
struct AfterTraining {
  TrainBreakdown ranks;
  std::optional<ParameterNorms> norms;
  nlohmann::json memory;                         // every rank's account, in rank order (this rank's alone after a failure)
  std::optional<wl::StalenessCounts> staleness;  // ps-async: every worker's steps by staleness
  std::size_t stepsPeakBytes = 0;                // this process's, before the weights were gathered for the norms
};
AfterTraining gatherAfterTraining(Bootstrap& boot, wl::Trainer& trainer, const wl::Mesh& mesh, const MeasuredSteps& steps) {
  AfterTraining out;
  // Before gathering the weights for the norms: ZeRO-3 takes the whole model for that, after the steps.
  const wl::MemoryAccount mine = trainer.memoryAccount();
  out.stepsPeakBytes = mine.steps.totalPeak;
  const std::string account = jsonText(mine.toJson());
  out.memory = nlohmann::json::array();
  if (!steps.error) {
    for (const std::string& s : mesh.worldSize() > 1 ? boot.allGatherStrings(account) : std::vector<std::string>{account})
      out.memory.push_back(nlohmann::json::parse(s));
  } else {
    out.memory.push_back(nlohmann::json::parse(account));
  }
  if (mesh.layout().sync == wl::SyncKind::kAsyncParameterServer) {
    // Each worker saw its own staleness: the counts added over the ranks (a dedicated server's are empty).
    out.staleness = steps.staleness;
    if (!steps.error && mesh.worldSize() > 1) {
      out.staleness = wl::StalenessCounts{};
      for (const std::string& s : boot.allGatherStrings(jsonText(nlohmann::json(steps.staleness.counts))))
        for (std::size_t k = 0; const auto& n : nlohmann::json::parse(s))
          out.staleness->add(static_cast<int>(k++), n.get<std::int64_t>());
    }
  }
  if (!steps.error) {
    out.norms = gatherParameterNorms(boot, mesh, trainer);
    out.ranks = gatherBreakdown(boot, mesh, trainer.rankWorkPerStep(), steps.timed);
  } else {
    out.ranks.stepSeconds = steps.timed.total;  // the others are not reachable
    if (mesh.worldSize() == 1) out.norms = gatherParameterNorms(boot, mesh, trainer);
  }
  return out;
}

// An MFU above 100% of the measured ceiling is impossible: process 0 measures the ceiling once more, the
// other ranks waiting without spinning (where they still answer: not after a failure).
void recheckCeilingIfExceeded(double perDevice, std::optional<CeilingSet>& ceilings, Bootstrap& boot, bool allAnswer) {
  bool recheck = ceilings && ceilings->computeTflops() > 0 && aboveCeiling(perDevice / ceilings->computeTflops());
  if (allAnswer) recheck = boot.sum(recheck ? 1 : 0) > 0;
  if (!recheck) return;
  if (ceilings) ceilings->recheck(CeilingKind::kCompute, MemoryLevel::kDram, "MFU");
  if (allAnswer) boot.quietBarrier();
}

// What was trained, as the record states it (after the steps: the peak memory is the run's).
TrainRecord describeRun(wl::Trainer& trainer, const TrainRunOptions& o, const wl::Mesh& mesh, const RunContext& ctx) {
  wl::Model& model = trainer.model();
  TrainRecord r;
  r.model = model.config().kind;
  r.preset = model.config().preset;
  r.backend = trainer.device().cuda() ? wl::DeviceKind::kCuda : wl::DeviceKind::kCpu;
  r.device = trainer.device().name();
  r.precision = o.train.precision;
  r.item = model.itemKind();
  r.worldSize = mesh.worldSize();
  r.layout = mesh.layout();
  r.mesh = mesh.axes();
  r.config = trainer.config();
  r.parameters = model.parameterCount();
  r.ownedParameters = trainer.ownedParameterElements();
  r.flopsPerStep = trainer.flopsPerStep();
  r.recomputeFlopsPerStep = trainer.recomputeFlopsPerStep();
  r.recompute = model.config().recompute;
  r.itemsPerStep = trainer.itemsPerStep();
  r.firstStep = trainer.firstStep();
  r.warmupSteps = o.warmupSteps;
  const wl::MemoryAccount memory = trainer.memoryAccount();
  r.peakMemoryBytes = std::max(memory.setupPeak, memory.steps.totalPeak);
  r.memoryLimitBytes = trainer.device().memoryLimit();
  r.float16 = o.train.precision == Precision::kFloat16;
  if (const wl::Pipeline* p = trainer.pipeline())
    r.pipeline = PipelineRecord{p->stages(), o.train.microBatches, mesh.layout().schedule};
  r.evalEvery = o.train.evalEvery;
  r.evalBatches = trainer.evalBatchCount();
  if (const data::DataInfo* e = trainer.evalDataInfo())
    r.evalSplit = {{"name", e->name}, {"split", nameOf(e->split)}, {"samples", e->size}};
  r.label = o.label;
  r.suiteStep = ctx.step;
  return r;
}

// This rank's trainer, built on every rank or on none (a failure on one is agreed), with its checkpoint group.
std::unique_ptr<wl::Trainer> buildTrainer(const TrainRunOptions& o, RunContext& ctx, const wl::Mesh& mesh) {
  std::unique_ptr<wl::Trainer> built;
  // The watchdog times every wait (commTimeoutS 0): a wait that gave up on its own at --timeout would be a second
  // voice, racing the rank that is stuck in its own work to say it.
  collectively(ctx.boot, [&] { built = std::make_unique<wl::Trainer>(o.train, &mesh, 0); });
  built->setCheckpointGroup(
      {ctx.boot.rank(), ctx.boot.size(), [&boot = ctx.boot](const std::string& mine) { return boot.allGatherStrings(mine); }});
  checkWarmup(o, *built);
  return built;
}

// Process 0 streams every step as it ends, as part of `about` (the run as described before it trained): a kill, a
// hang or a crash loses at most the step in flight. Nothing without a writer.
StepDone stepStreamer(RunContext& ctx, const TrainRecord& about) {
  if (!ctx.writer) return {};
  return [&ctx, &about, first = true](const wl::StepResult& r, bool timed) mutable {
    ctx.writer->stream(progressJson(r, timed, about, first));
    first = false;
  };
}

// Process 0's train record: what was trained, its steps, what every rank's came to, and the MFU.
TrainRecord finalRecord(wl::Trainer& trainer, const TrainRunOptions& o, const wl::Mesh& mesh, const RunContext& ctx,
                        MeasuredSteps steps, AfterTraining after, double perDevice) {
  TrainRecord rec = describeRun(trainer, o, mesh, ctx);
  rec.steps = std::move(steps);
  rec.ranks = std::move(after.ranks);
  rec.memory = std::move(after.memory);
  rec.staleness = std::move(after.staleness);
  rec.asyncPsBytesPerStep = trainer.asyncPsBytesPerStep();
  rec.peakMemoryBytes = std::max(rec.peakMemoryBytes, after.stepsPeakBytes);
  if (after.norms) {
    if (rec.completed()) rec.parameters = after.norms->count;  // the whole model's, over the stages
    if (after.norms->finite()) rec.parameterNorms = std::move(after.norms->norms);
  }
  if (!o.train.checkpointDir.empty()) rec.checkpoint = trainer.checkpointStats().toJson();
  rec.tflopsPerDevice = perDevice;
  rec.moeSettings = trainer.model().config().moe;
  rec.moe = trainer.model().moeStats();
  return rec;
}

// Every rank trains its part of the layout; process 0 prints and writes the record.
void trainOnMesh(const TrainRunOptions& o, RunContext& ctx, const wl::Mesh& mesh) {
  const bool leader = ctx.boot.rank() == 0;
  const int world = mesh.worldSize();
  Watchdog watchdog(o.timeoutS, ctx.boot.rank(), endAllRanksOnTimeout(o.timeoutS, ctx.boot));
  WatchdogScope guard(watchdog);
  activity::set("building the model and loading the data");
  std::unique_ptr<MlperfRunLog> mllog;
  if (leader && !o.mllogPath.empty()) mllog = std::make_unique<MlperfRunLog>(o.mllogPath);
  std::optional<Fault> fault;
  collectively(ctx.boot, [&] { fault = faultFromEnvironment(); });
  TrainRunOptions hooked = o;  // a planted router fault skews the MoE routers the model is built with
  hooked.train.routerSkew = plantedRouterSkew(fault, ctx.boot.rank());
  const std::unique_ptr<wl::Trainer> built = buildTrainer(hooked, ctx, mesh);
  wl::Trainer& trainer = *built;
  if (leader) printTrainBanner(trainer, o, mesh);
  const Precision gemmPrecision = trainer.device().cuda() ? o.train.precision : Precision::kFloat32;
  std::optional<CeilingSet> ceilings;
  if (o.ceiling && leader) measureGemmCeiling(ceilings, ctx, trainer, fault, gemmPrecision);
  if (world > 1) ctx.boot.quietBarrier();  // the ceiling is measured on process 0 alone
  std::fflush(stdout);

  TrainRecord about = describeRun(trainer, o, mesh, ctx);
  about.steps.error = "the run stopped before it wrote its train record";  // what a reader of this alone says
  if (mllog) mllog->initStop(trainer, o);
  TrainLoopResult loop = runTrainLoop(trainer, o, mesh, ctx.boot, fault, leader, stepStreamer(ctx, about), mllog.get());
  AfterTraining after = gatherAfterTraining(ctx.boot, trainer, mesh, loop.steps);
  const std::vector<double>& stepSeconds = after.ranks.stepSeconds;
  const double perDevice = stepSeconds.empty() ? 0 : trainer.flopsPerStep() / summarize(stepSeconds).median / 1e12 / world;
  recheckCeilingIfExceeded(perDevice, ceilings, ctx.boot, world > 1 && !loop.steps.error);
  if (!leader) {
    if (loop.failed) std::rethrow_exception(loop.failed);
    return;
  }
  TrainRecord rec = finalRecord(trainer, o, mesh, ctx, std::move(loop.steps), std::move(after), perDevice);
  if (rec.timed()) rec.mfu = mfuFor(trainer, o.train.precision, gemmPrecision, ceilings, perDevice);
  printTrainSummary(rec);
  if (ctx.writer) ctx.writer->add(toJson(rec));
  if (loop.failed) {
    ctx.keepTelemetry();  // the unwinding may block on a rank that is gone
    std::rethrow_exception(loop.failed);
  }
}

}  // namespace

void checkTrainRun(const TrainRunOptions& o) {
  wl::TrainOptions train = o.train;
  train.device = wl::parseDeviceSpec(o.device);
  wl::validateTrainOptions(train);
  if (!o.dumpLogits.empty() && o.train.layout.pp > 1)
    throw UsageError("--dump-logits with --pp: the logits are on the last stage; dump them from a run without --pp");
  // Where the run writes: a run must not train for minutes and then find it cannot.
  if (!o.dumpLogits.empty()) checkOutputFile("--dump-logits", o.dumpLogits);
  if (!o.mllogPath.empty()) checkOutputFile("--mllog", o.mllogPath);
  checkMlperfSubmission(o.mllogSubmission, !o.mllogPath.empty());
  if (!o.train.checkpointDir.empty()) checkOutputDirectory("--checkpoint-dir", o.train.checkpointDir);
  if (!o.traceDir.empty()) checkOutputDirectory("--trace", o.traceDir);
}

void checkWarmupSteps(std::int64_t warmupSteps, std::int64_t stepsToTrain) {
  if (warmupSteps >= stepsToTrain)
    throw UsageError(fmt::format("--warmup-steps {} leaves none of the {} steps to time: train more steps or warm up fewer",
                                 warmupSteps, stepsToTrain));
}

void runTrainStep(const TrainRunOptions& given, RunContext& ctx) {
  Bootstrap& boot = ctx.boot;
  TrainRunOptions o = given;
  o.train.given = toJson(given);  // the table's record, which the record's config and every checkpoint's begin with
  o.train.device = wl::parseDeviceSpec(o.device);
  const int namedGpu = o.train.device.index;  // cuda:N: every process on GPU N (comm/gpu_plan.h); -1: its local rank's
  if (o.train.device.cuda() && o.train.device.index < 0 && boot.size() > 1)
    o.train.device.index = boot.localRank();  // one GPU per process
  // The ranks on this host share its memory (the model's host check, workloads/trainer/trainer_options.h).
  o.train.ranksOnHost = boot.localSize();
  wl::LayoutOptions layout = wl::resolveLayout(o.train.layout, boot.size());
  layout.syncBn = wl::resolveSyncBatchNorm(o.train, layout.dataShards());
  std::unique_ptr<Communicator> world;
  if (boot.size() > 1) {
    CommunicatorOptions co;
    co.backend = o.train.device.cuda() ? BackendKind::kNccl : BackendKind::kMpi;
    co.gpus.first = namedGpu;
    activity::set(fmt::format("creating the {} communicator", nameOf(co.backend)));
    collectively(boot, [&] { world = makeCommunicator(co, boot); });
    ctx.addLayout(ctx.step.empty() ? "train" : ctx.step, world->backend(), world->worldSize(), 1,
                  nlohmann::json::array({{{"rank", world->rank(0)}, {"device", world->device(0)}}}));
  }
  std::unique_ptr<wl::Mesh> mesh;
  collectively(boot, [&] { mesh = std::make_unique<wl::Mesh>(layout, world.get()); });
  trainOnMesh(o, ctx, *mesh);
}

int runTrain(const TrainRunOptions& o, const std::vector<std::string>& argv) {
  checkTrainRun(o);
  auto session = RunSession::open(BootstrapKind::kAuto, launchedByMpi(), "train", argv, toJson(o), o.jsonPath, o.timeoutS);
  try {
    runTrainStep(o, session->context());
  } catch (const std::exception&) {
    // The steps trained before a failure stay in the result, written by process 0 alone: the other processes may
    // be inside a collective, or gone, so nothing is gathered (bench/failures/run_ending.h ends them). An error
    // before any record leaves no file.
    const ResultWriter* w = session->context().writer;
    if (w && !w->records().empty()) session->finishAfterFailure();
    throw;
  }
  session->finish();
  return 0;
}

}  // namespace ts

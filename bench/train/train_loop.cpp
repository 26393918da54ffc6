#include "bench/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/heartbeat.h"
#include "base/json_text.h"
#include "base/steady_seconds.h"
#include "base/stop_request.h"
#include "bench/failures/activity.h"
#include "bench/run/progress.h"
#include "bench/run/trace_files.h"
#include "bench/train/train_console.h"
#include "comm/bootstrap.h"

namespace ts {
namespace {

// The first step's logits (of its last micro-batch, computed with the weights before the step's update),
// which samples they are, and the step's loss.
void dumpLogits(const std::string& path, wl::Trainer& trainer, const wl::StepResult& r) {
  const wl::Tensor& logits = trainer.model().logits();
  const std::vector<float> host = logits.toHost();
  const std::size_t cols = static_cast<std::size_t>(logits.shape.back()), rows = logits.numel() / cols;
  nlohmann::json rowsJson = nlohmann::json::array();
  for (std::size_t i = 0; i < rows; ++i)
    rowsJson.push_back(std::vector<float>(host.begin() + i * cols, host.begin() + (i + 1) * cols));
  const nlohmann::json doc = {{"step", r.step},
                              {"loss", trainer.lastMicroBatchLoss()},
                              {"sample_indices", trainer.lastSampleIndices()},
                              {"logits", rowsJson}};
  writeFileAtomically(path, jsonText(doc));
}

// Before each step: a stop asked for by a signal, and a planted fault due at this step on this rank.
void beforeStep(const wl::Trainer& trainer, const std::optional<Fault>& fault, int rank) {
  activity::set(fmt::format("train step {}", trainer.nextStep()));
  if (const int sig = stopRequested())
    throw StoppedBySignal(sig, fmt::format("stopped by signal {} before train step {}", sig, trainer.nextStep()));
  // A delay without :step= fires every step (a straggler); the others fire once, at their step (or step 0).
  const bool due = fault && (fault->step == trainer.nextStep() ||
                             (fault->step < 0 && (fault->kind == Fault::Kind::kDelay || trainer.nextStep() == 0)));
  if (!due || fault->rank != rank || !fault->inOperation()) return;
  if (fault->kind == Fault::Kind::kDie)
    std::fprintf(stderr, "trainscope: planted fault: %s dies at the start of train step %lld\n", activity::who().c_str(),
                 fault->step);
  std::fflush(stderr);
  injectInOperation(*fault);
}

void addStep(MeasuredSteps& steps, const wl::StepResult& r, bool timed) {
  if (std::isnan(steps.initialLoss)) steps.initialLoss = r.loss;
  steps.finalLoss = r.loss;
  steps.lossCurve.push_back({r.step, r.loss, r.lr, r.gradNorm, r.skipped, r.lossScale, r.staleness});
  steps.staleness.add(r.staleness);
  steps.checkpointS += r.checkpointS;
  if (!timed) return;  // the warmup's exchanges are not measured, as its steps are not
  steps.timed.add(r);
  for (const auto& [name, e] : r.expertExchanges) steps.expertExchanges[name].add(e);
}

// This rank's place in every trace file: the mesh, and per axis its size and this rank's coordinate
// ("pp", "pp_rank"), which reports/traces/critical_path.py reads.
void finishTrace(TraceFiles& files, wl::Trainer& trainer, const wl::Mesh& mesh, std::int64_t microBatches) {
  nlohmann::json about = {{"mesh", mesh.toJson()}, {"micro_batches", microBatches}};
  std::vector<TraceGroup> groups;  // the communicators the collectives' spans name (traceName)
  for (const wl::MeshAxis& a : mesh.axes()) {
    about[std::string(a.name)] = a.size;
    about[wl::coordinateField(a)] = a.coordinate;
  }
  for (wl::AxisSet s : mesh.groupSets())  // each communicator once: two sets of the same ranks share one
    if (mesh.size(s) > 1 &&
        std::none_of(groups.begin(), groups.end(), [&](const TraceGroup& g) { return g.name == wl::traceName(mesh.groupId(s)); }))
      groups.push_back({wl::traceName(mesh.groupId(s)), wl::groupName(mesh, s), mesh.groupRanks(s)});
  const auto& cfg = trainer.model().config();
  files.finish(fmt::format("train {} {} {}", nameOf(cfg.kind), cfg.preset, mesh.layout().name()), about, groups,
               mesh.world() ? std::optional(mesh.world()->backend()) : std::nullopt);
}

std::optional<TargetRecord> targetOf(const wl::TrainOptions& o) {
  if (o.targetAccuracy > 0) return TargetRecord{TargetMetric::kAccuracy, o.targetAccuracy, std::nullopt};
  if (o.targetLoss > 0) return TargetRecord{TargetMetric::kLoss, o.targetLoss, std::nullopt};
  return std::nullopt;
}

// An evaluation after the step just trained (--eval-every): recorded, printed, logged, and the run stopped
// at its target (every rank holds the same figures, so all stop alike).
bool evaluationDue(const wl::Trainer& trainer, const TrainRunOptions& o) {
  const std::int64_t every = o.train.evalEvery;
  return every > 0 && (trainer.nextStep() % every == 0 || trainer.done());
}

void evaluate(wl::Trainer& trainer, MeasuredSteps& steps, double elapsedS, double trainS, bool leader, MlperfRunLog* mllog) {
  activity::set(fmt::format("evaluating after train step {}", trainer.nextStep() - 1));
  if (mllog) mllog->evalStart(trainer);
  const auto t0 = std::chrono::steady_clock::now();
  const wl::EvalResult e = trainer.evaluate();
  const EvalPoint point{e, elapsedS + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), trainS};
  steps.evals.push_back(point);
  if (mllog) mllog->evalStop(trainer, e);
  if (leader) printEvalLine(point, trainer.model().itemName());
  if (!steps.target || steps.target->reached || !trainer.reachedTarget(e)) return;
  steps.target->reached = point;
  if (leader) printTargetLine(*steps.target);
  trainer.stop();
}

}  // namespace

TrainLoopResult runTrainLoop(wl::Trainer& trainer, const TrainRunOptions& o, const wl::Mesh& mesh, Bootstrap& boot,
                             const std::optional<Fault>& fault, bool leader, const StepDone& stepDone, MlperfRunLog* mllog) {
  const int world = mesh.worldSize();
  const std::int64_t todo = o.train.steps - trainer.firstStep();
  const std::int64_t logEvery = o.logEvery > 0 ? o.logEvery : std::max<std::int64_t>(1, todo / 20);
  if (leader) printStepHeader(trainer.model().itemName());
  Progress progress("train", static_cast<double>(todo), leader);
  std::unique_ptr<TraceFiles> traceFiles;
  if (!o.traceDir.empty()) traceFiles = std::make_unique<TraceFiles>(boot, o.traceDir, world);
  // A launcher ending the run (another rank died) asks this rank to stop: the waits notice, the steps
  // measured so far go into the record, then the process exits.
  activity::setGracefulStop(world > 1);
  if (world > 1) boot.barrier();  // the origin every rank's collective launches are measured from
  TrainLoopResult out;
  out.steps.timed.originS = steadySeconds();
  out.steps.target = targetOf(o.train);
  const auto start = std::chrono::steady_clock::now();
  double trainS = 0;  // the steps' own time, evaluations excluded
  if (mllog) mllog->runStart();
  try {
    for (std::int64_t i = 0; !trainer.done(); ++i) {
      beforeStep(trainer, fault, mesh.rank());
      if (mllog) mllog->beforeStep(trainer);
      progress.step(fmt::format("step {}", trainer.nextStep()));
      const wl::StepResult r = trainer.step();
      heartbeat::beat();
      if (std::isnan(out.steps.initialLoss) && !o.dumpLogits.empty() && leader) dumpLogits(o.dumpLogits, trainer, r);
      addStep(out.steps, r, i >= o.warmupSteps);
      if (stepDone) stepDone(r, i >= o.warmupSteps);
      if (leader && (r.step % logEvery == 0 || trainer.done())) {
        progress.done();
        printStepLine(r, trainer.itemsPerStep());
      }
      trainS += r.totalS;
      if (evaluationDue(trainer, o)) {
        progress.done();
        evaluate(trainer, out.steps, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), trainS,
                 leader, mllog);
      }
    }
  } catch (const std::exception& e) {
    // Another rank cannot finish the step this one left: keep what was measured here (process 0) and
    // end the run from the caller (main ends every process).
    out.steps.error = e.what();
    out.failed = std::current_exception();
  }
  progress.done();
  if (mllog) {
    // MLPerf's statuses: success when the target was reached (or, without one, every step trained).
    const bool success = !out.steps.error && (!out.steps.target || out.steps.target->reached);
    mllog->runStop(trainer, success);
  }
  activity::setGracefulStop(false);
  // After a failure the activity stays the step it happened in: the run's last line may name it.
  if (!out.steps.error) activity::set("gathering the ranks' step times");
  if (traceFiles && !out.steps.error) finishTrace(*traceFiles, trainer, mesh, o.train.microBatches);
  return out;
}

}  // namespace ts

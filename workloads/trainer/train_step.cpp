// Trainer's step: the data, the forward and backward of each micro-batch (or the pipeline's schedule of them), the
// gradient sync, the global gradient norm, clipping and the optimizer update, each phase a trace span and a time in
// the StepResult; the step's collectives; a checkpoint when one is due.
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "kernels/trace.h"
#include "workloads/device_ops.h"
#include "workloads/parallel/comm_tracker.h"
#include "workloads/trainer.h"

namespace ts::wl {

StepResult Trainer::step() {
  const std::int64_t step = nextStep_;
  try {
    return trainStep();
  } catch (const MemoryLimitExceeded& e) {
    // The same line as a layout that cannot be built, for a step that needs more than its setup did (ZeRO-3
    // gathers parameters inside each step), naming the step.
    throw UsageError(fmt::format("--memory-limit {} per rank: train step {} needed {} more for {} with {} in use: {}",
                                 formatBytes(e.limit), step, formatBytes(e.bytes), nameOf(e.kind), formatBytes(e.inUse),
                                 saveMemoryAdvice(options_.layout, e.kind)));
  }
}

StepResult Trainer::trainStep() {
  if (done()) throw Error("internal: Trainer::step after the last step");
  StepResult r;
  r.step = nextStep_;
  // Every phase is a trace span (and an NVTX range); the phase times are the spans' lengths.
  trace::Span stepSpan("step", trace::Role::kStep, static_cast<int>(r.step));
  if (trace::enabled()) stepSpan.annotate({{"step", r.step}});  // no JSON built per step otherwise
  if (parts_.asyncPs && !parts_.asyncPs->worker()) return serveStep(r, stepSpan);
  trace::Span dataSpan("data", trace::Role::kPhase);
  data::Prefetcher::Next next = data_.loader->next();
  dataSpan.close();
  r.dataS = next.waitSeconds;
  parts_.model->zeroGrads();
  if (parts_.asyncPs) {  // the parameter versions this step may use (waiting, if it is more than --staleness ahead)
    trace::Span wait("sync", trace::Role::kPhase);
    r.staleness = parts_.asyncPs->beginStep(r.step);
    r.syncS += wait.close();
  }
  if (parts_.masters) parts_.masters->beginStep();
  r.lossScale = parts_.scaler ? parts_.scaler->scale() : 1.0;
  StepContext ctx;
  if (parts_.tp) parts_.tp->install(ctx);
  if (parts_.ep) parts_.ep->install(ctx);
  if (parts_.syncBn) parts_.syncBn->install(ctx);
  const std::int64_t M = options_.microBatches;
  // The step's loss is the mean over every rank's micro-batches: each backward takes its share. Under model
  // averaging each rank's gradient is its own batch's mean (it steps on it alone).
  const int shares = options_.layout.sync == SyncKind::kAverage ? 1 : dataParallel();
  const auto scale = static_cast<float>(r.lossScale / static_cast<double>(M * shares));
  double loss = forwardBackward(r, std::move(next.batch), ctx, scale);
  if (parts_.asyncPs) return finishAsyncStep(r, loss, stepSpan);
  trace::Span syncSpan("sync", trace::Role::kPhase);
  // The last stage's loss, then every rank's mean: the same on all, so all decide alike. The step's communication
  // (timed, and planned: train_step_plan.cpp), where a rank waits for its peers as in any other sum.
  if (parts_.pipeline) loss = parts_.pipeline->sumOverStages(loss, true);
  r.loss = parts_.sync->groupMean(loss / static_cast<double>(M), true);
  if (parts_.masters) parts_.masters->endStep();
  if (!std::isfinite(r.loss)) throw Error(fmt::format("step {}: the loss is {} (diverged; lower --lr)", r.step, r.loss));
  update(r, syncSpan);
  collectStepComm(r);
  ++nextStep_;
  r.totalS = stepSpan.close();
  checkpointIfDue(r);
  return r;
}

double Trainer::forwardBackward(StepResult& r, data::Batch batch, StepContext& ctx, float scale) {
  const std::int64_t M = options_.microBatches, mb = microBatchSize();
  GradientSync& gradSync = *parts_.sync;
  double loss = 0;
  if (Pipeline* pipeline = parts_.pipeline.get()) {
    std::vector<data::Batch> micros;
    for (std::int64_t i = 0; i < M; ++i) micros.push_back(batch.slice(i * mb, (i + 1) * mb));
    PipelineTimes times;
    loss = pipeline->step(micros, scale, gradSync, ctx, times);
    r.forwardS = times.forwardS;
    r.backwardS = times.backwardS;
    r.forwardCommS = times.forwardCommS;
    r.backwardCommS = times.backwardCommS;
    r.syncS = times.syncS;
    r.pipelineWaitS = times.waitS;
    lastIndices_ = micros.back().sampleIndices;
    return loss;
  }
  for (std::int64_t i = 0; i < M; ++i) {
    const bool last = i == M - 1;
    const data::Batch micro = M == 1 ? std::move(batch) : batch.slice(i * mb, (i + 1) * mb);
    trace::Span forward("forward", trace::Role::kCompute, static_cast<int>(i));
    const double comm0 = blockedInCommunicationS();
    gradSync.beforeForward(ctx);
    lastMicroLoss_ = parts_.model->forward(micro, ctx);
    loss += lastMicroLoss_;
    lastIndices_ = micro.sampleIndices;
    device_->synchronize();
    r.forwardS += forward.close();
    const double comm1 = blockedInCommunicationS();
    r.forwardCommS += comm1 - comm0;
    trace::Span backward("backward", trace::Role::kCompute, static_cast<int>(i));
    gradSync.beforeBackward(ctx, last);
    parts_.model->backward(scale, ctx);
    device_->synchronize();
    r.backwardS += backward.close();
    r.backwardCommS += blockedInCommunicationS() - comm1;
    trace::Span sync("sync", trace::Role::kPhase);
    gradSync.afterBackward(last);
    r.syncS += sync.close();
  }
  return loss;
}

void Trainer::update(StepResult& r, trace::Span& syncSpan) {
  GradientSync& gradSync = *parts_.sync;
  Pipeline* pipeline = parts_.pipeline.get();
  TensorParallelGroup* tp = parts_.tp.get();
  ExpertParallelGroup* ep = parts_.ep.get();
  LossScaler* scaler = parts_.scaler.get();
  const std::vector<Param*> params = gradSync.updateParams();
  // Over the whole model: this rank's share, then the data-parallel shards, the tensor-parallel slices
  // (replicated tensors once), the experts of the expert-parallel ranks (each holds its own), and the pipeline stages.
  auto global = [&](double sliced, double replicated, double experts) {  // the collectives in one order on every rank
    double sq = gradSync.globalSumOfSquares(replicated);
    const double s = gradSync.globalSumOfSquares(sliced);
    sq += tp ? tp->sum(s) : s;
    if (ep) sq += ep->sum(gradSync.expertSumOfSquares(experts));
    return pipeline ? pipeline->sumOverStages(sq, true) : sq;
  };
  // The gradient norm's own sums are the update's compute, timed with the optimizer (as the clipping is, inside
  // its span); only their sums over the ranks are the sync's (on one process the sync column timed the norm alone).
  double normS = 0;
  auto sumOfSquares = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    double sliced = 0, replicated = 0, experts = 0;  // each sum a value on the host: its device work is done
    for (Param* p : params)
      (p->tpShard()      ? sliced
       : ep && p->expert ? experts
                         : replicated) += ops::sumOfSquares(*p->grad.device, p->grad.data, p->grad.numel());
    normS += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return global(sliced, replicated, experts);
  };
  r.lr = options_.schedule.at(r.step);
  // The overflow check needs only every rank to see the same (finite or not) sum.
  // (An expert's overflow reaches its expert-parallel peers through the experts' sum.)
  if (scaler && !scaler->unscaleAndCheck(params, [&](double sq) { return global(sq, 0, sq); })) {
    r.skipped = true;  // the gradients overflowed: no update, a smaller scale next step
    r.gradNorm = NAN;
  } else {
    r.gradNorm = std::sqrt(sumOfSquares());
    // Global, so every rank stops alike; before the update, so the weights of the steps kept stay finite.
    if (!std::isfinite(r.gradNorm))
      throw Error(fmt::format("step {}: the gradient norm is {} (diverged; lower --lr)", r.step, r.gradNorm));
    r.syncS += syncSpan.close() - normS;
    trace::Span optimizerSpan("optimizer", trace::Role::kCompute);
    if (options_.clipNorm > 0 && r.gradNorm > options_.clipNorm) {  // done on the device by the synchronize below
      const float s = static_cast<float>(options_.clipNorm / r.gradNorm);
      for (Param* p : params) ops::scale(*p->grad.device, p->grad.data, s, p->grad.numel());
    }
    // Adam's bias correction counts the updates made, not the steps (a skipped step made none).
    parts_.optimizer->step(r.lr, static_cast<int>(r.step + 1 - (scaler ? scaler->skippedSteps() : 0)));
    device_->synchronize();
    r.optimizerS = optimizerSpan.close() + normS;
    trace::Span afterUpdate("sync", trace::Role::kPhase);
    gradSync.afterUpdate();
    r.syncS += afterUpdate.close();
  }
  if (r.skipped && parts_.masters && parts_.masters->shardsMasters()) gradSync.afterUpdate();  // the values float32 again
  if (r.skipped) r.syncS += syncSpan.close();
}

// The step's collectives: the gradient sync's, the pipeline's, tensor and expert parallel's and SyncBatchNorm's; the
// mixtures' exchanges by layer and direction.
void Trainer::collectStepComm(StepResult& r) {
  r.comm = parts_.sync->takeStepComm();
  for (StepComm p :
       {parts_.pipeline ? parts_.pipeline->takeStepComm() : StepComm{}, parts_.tp ? parts_.tp->takeStepComm() : StepComm{},
        parts_.ep ? parts_.ep->takeStepComm() : StepComm{}, parts_.syncBn ? parts_.syncBn->takeStepComm() : StepComm{}}) {
    r.comm.add(p);
  }
  if (parts_.ep) r.expertExchanges = parts_.ep->takeExchanges();
}

// A checkpoint after the step when --checkpoint-every falls on it or training is over: not part of the step's time.
void Trainer::checkpointIfDue(StepResult& r) {
  if (!options_.checkpointDir.empty() &&
      ((options_.checkpointEvery > 0 && nextStep_ % options_.checkpointEvery == 0) || done())) {
    trace::Span checkpoint("checkpoint", trace::Role::kPhase);
    saveCheckpoint();
    r.checkpointS = checkpoint.close();
    checkpoints_.recordStall(r.checkpointS);
    if (done()) finishCheckpoint();  // training is over: the last save's write is no longer a stall
  }
}

}  // namespace ts::wl

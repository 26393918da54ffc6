#include "workloads/trainer/evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/trace.h"

namespace ts::wl {

Evaluation::Evaluation(const data::DataOptions& training, const TrainOptions& o, std::int64_t microBatch, int dataShards) {
  // The held-out split in batches of what the model is built for on every rank: the data shards x micro-batch samples.
  data::DataOptions e = training;
  e.split = data::Split::kHeldOut;
  e.globalBatch = microBatch * dataShards;
  source_ = std::make_unique<data::DataSource>(data::makeDataSource(e));
  const std::int64_t whole = source_->info().size / e.globalBatch;
  if (whole < 1)
    throw UsageError(
        fmt::format("--eval-every: the held-out split of --data {} has {} samples, fewer than one evaluation "
                    "batch ({} = {} data-parallel rank(s) x {} per micro-batch)",
                    o.data, source_->info().size, e.globalBatch, dataShards, microBatch));
  batches_ = o.evalBatches > 0 ? std::min(o.evalBatches, whole) : whole;
  samples_ = batches_ * e.globalBatch;
}

EvalResult Evaluation::run(ModelOnMesh& m, Device& device, int dataParallel, std::int64_t step) {
  trace::Span span("eval", trace::Role::kPhase);
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult e;
  e.step = step;
  StepContext ctx;
  ctx.training = false;
  ctx.evaluating = true;
  if (m.tp) m.tp->install(ctx);
  if (m.ep) m.ep->install(ctx);
  double lossSum = 0, correct = 0, rows = 0;
  std::vector<float> logits;
  for (std::int64_t i = 0; i < batches_; ++i) {
    const data::Batch batch = source_->batch(i);
    m.sync->beforeForward(ctx);
    // Pipeline stages pass the batch along; the last one has the loss and the logits.
    double loss = 0;
    const Tensor* out = m.pipeline ? m.pipeline->forwardOnly(batch, ctx, &loss) : &m.model->logits();
    if (!m.pipeline) loss = m.model->forward(batch, ctx);
    const std::size_t n = batch.targets.size();
    if (out) {
      // Top-1 of each row of the logits ([samples, classes] or [tokens, vocabulary]) against its target.
      const std::size_t classes = out->numel() / n;
      logits.resize(out->numel());
      device.download(logits.data(), out->data, logits.size() * sizeof(float));
      for (std::size_t r = 0; r < n; ++r) {
        const float* row = logits.data() + r * classes;
        correct += static_cast<double>(std::max_element(row, row + classes) - row == batch.targets[r]);
      }
      lossSum += loss * static_cast<double>(n);
    }
    rows += static_cast<double>(n);
  }
  m.sync->afterForwardOnly();
  if (m.pipeline) {  // the last stage's sums, on every stage
    lossSum = m.pipeline->sumOverStages(lossSum, false);
    correct = m.pipeline->sumOverStages(correct, false);
  }
  // The evaluation's collectives (ZeRO-3's gathers, tensor-parallel sums) are not the next step's.
  m.sync->takeStepComm();
  if (m.tp) m.tp->takeStepComm();
  if (m.ep) {
    m.ep->takeStepComm();
    m.ep->takeExchanges();
  }
  if (m.pipeline) m.pipeline->takeStepComm();
  // Every rank evaluates as many rows, so the group's mean of the ranks' means is the mean over all rows.
  e.loss = m.sync->groupMean(lossSum / rows, false);
  e.accuracy = m.sync->groupMean(correct / rows, false);
  e.perplexity = m.model->itemKind() == ItemKind::kTokens ? std::exp(e.loss) : 0.0;
  e.items = static_cast<std::int64_t>(rows) * dataParallel;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

bool reachedTarget(const TrainOptions& o, const EvalResult& e) {
  return (o.targetAccuracy > 0 && e.accuracy >= o.targetAccuracy) || (o.targetLoss > 0 && e.loss <= o.targetLoss);
}

}  // namespace ts::wl

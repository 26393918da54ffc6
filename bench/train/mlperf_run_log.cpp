#include "bench/train/mlperf_run_log.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/train/train_options.h"

namespace ts {

MlperfRunLog::MlperfRunLog(const std::string& path) : log_(path) { log_.log(MlEvent::kStart, "init_start"); }

void MlperfRunLog::initStop(wl::Trainer& trainer, const TrainRunOptions& o) {
  const MlperfSubmission& s = o.mllogSubmission;
  if (!s.org.empty()) log_.log(MlEvent::kPoint, "submission_org", s.org);
  if (!s.platform.empty()) log_.log(MlEvent::kPoint, "submission_platform", s.platform);
  if (s.division != MlperfDivision::kNone) log_.log(MlEvent::kPoint, "submission_division", nameOf(s.division));
  const auto& cfg = trainer.model().config();
  // MLPerf's names are identifiers (llama31_8b): the model and its preset.
  log_.log(MlEvent::kPoint, "submission_benchmark", fmt::format("{}_{}", nameOf(cfg.kind), cfg.preset));
  log_.log(MlEvent::kPoint, "cache_clear", s.cachesCleared);
  log_.log(MlEvent::kPoint, "global_batch_size", o.train.batch);
  log_.log(MlEvent::kPoint, "gradient_accumulation_steps", o.train.microBatches);
  log_.log(MlEvent::kPoint, "opt_name", nameOf(o.train.optimizer.kind));
  log_.log(MlEvent::kPoint, "opt_base_learning_rate", o.train.schedule.lr);
  log_.log(MlEvent::kPoint, "train_samples", trainer.dataInfo().size);
  if (trainer.evalDataInfo()) log_.log(MlEvent::kPoint, "eval_samples", trainer.evalSampleCount());
  log_.log(MlEvent::kEnd, "init_stop");
  samplesPerStep_ = o.train.batch;
  lossIsTheMetric_ = o.train.targetLoss > 0;
}

nlohmann::json MlperfRunLog::place(const wl::Trainer& trainer, bool atBlockStart) const {
  // The epoch (from 1) of the next sample at a block's start, else of the last sample trained, from the data
  // source's own count of epochs.
  const double epochs = trainer.epochsTrained();
  const auto epoch = static_cast<std::int64_t>(atBlockStart ? std::floor(epochs) + 1 : std::max(1.0, std::ceil(epochs)));
  return {{"samples_count", trainer.nextStep() * samplesPerStep_}, {"epoch_num", epoch}, {"step", trainer.nextStep()}};
}

void MlperfRunLog::beforeStep(const wl::Trainer& trainer) {
  if (inBlock_) return;
  log_.log(MlEvent::kStart, "block_start", nullptr, place(trainer, true));
  inBlock_ = true;
}

void MlperfRunLog::evalStart(const wl::Trainer& trainer) {
  if (inBlock_) log_.log(MlEvent::kEnd, "block_stop", nullptr, place(trainer, false));
  inBlock_ = false;
  log_.log(MlEvent::kStart, "eval_start", nullptr, place(trainer, false));
}

void MlperfRunLog::evalStop(const wl::Trainer& trainer, const wl::EvalResult& e) {
  const nlohmann::json at = place(trainer, false);
  log_.log(MlEvent::kEnd, "eval_stop", nullptr, at);
  log_.log(MlEvent::kPoint, "eval_accuracy", lossIsTheMetric_ ? e.loss : e.accuracy, at);
}

void MlperfRunLog::runStop(const wl::Trainer& trainer, bool success) {
  if (inBlock_) log_.log(MlEvent::kEnd, "block_stop", nullptr, place(trainer, false));
  inBlock_ = false;
  log_.log(MlEvent::kEnd, "run_stop", nullptr, {{"status", success ? "success" : "aborted"}});
}

}  // namespace ts

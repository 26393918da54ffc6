#pragma once
// A `train --mllog` run's events, in the order and with the fields MLPerf's training compliance checker
// (mlcommons/logging, rules 6.0.0) reads them:
//   init_start; the stated submission fields (mlperf_submission.h), submission_benchmark MODEL_PRESET,
//   cache_clear, global_batch_size, gradient_accumulation_steps (--micro-batches), opt_name,
//   opt_base_learning_rate, train_samples (one epoch), eval_samples (one evaluation); init_stop; run_start;
//   then blocks: block_start before the first step after run_start or an evaluation, block_stop before the
//   evaluation that ends it (or at the end), eval_start, eval_stop, eval_accuracy; run_stop (status success
//   or aborted).
// Every event of the loop carries samples_count (samples trained so far: steps x the global batch) and
// epoch_num, an integer as MLPerf counts epochs from 1: the epoch of the last sample trained, or at a
// block's start of the next one. eval_accuracy holds the run's quality metric, as MLPerf's benchmarks log
// theirs under that key: top-1 accuracy, or the loss with --target-loss (as the LLM benchmarks log theirs).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/train/mlperf_log.h"
#include "workloads/trainer.h"

namespace ts {

struct TrainRunOptions;

class MlperfRunLog {
 public:
  explicit MlperfRunLog(const std::string& path);  // logs init_start
  // The run's keys, then init_stop.
  void initStop(wl::Trainer& trainer, const TrainRunOptions& o);
  void runStart() { log_.log(MlEvent::kStart, "run_start"); }
  void beforeStep(const wl::Trainer& trainer);  // block_start when no block is open
  void evalStart(const wl::Trainer& trainer);   // block_stop, eval_start
  void evalStop(const wl::Trainer& trainer, const wl::EvalResult& e);
  void runStop(const wl::Trainer& trainer, bool success);  // block_stop of an open block, run_stop

 private:
  nlohmann::json place(const wl::Trainer& trainer, bool atBlockStart) const;

  MlperfLog log_;
  std::int64_t samplesPerStep_ = 0;
  bool lossIsTheMetric_ = false;
  bool inBlock_ = false;
};

}  // namespace ts

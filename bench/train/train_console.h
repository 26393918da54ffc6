#pragma once
// What `trainscope train` prints on process 0: what it trains, a line every few steps, and the summary of
// the record.
#include <cstdint>
#include <string>

#include "bench/train/train_options.h"
#include "bench/train/train_record.h"
#include "workloads/trainer.h"

namespace ts {

// "# train ..." (the model, its size and the data), "# layout ..." with several ranks, "# resumed ...".
void printTrainBanner(wl::Trainer& trainer, const TrainRunOptions& o, const wl::Mesh& mesh);
// The step table's header and one row per logged step.
void printStepHeader(const std::string& itemName);
void printStepLine(const wl::StepResult& r, std::int64_t itemsPerStep);
// "# eval after step N: ..." (the held-out figures) and "# target ... reached ..." (time to target).
void printEvalLine(const EvalPoint& p, const std::string& itemName);
void printTargetLine(const TargetRecord& t);
// The pipeline, the step time and MFU, and with several ranks the communication and the stragglers.
void printTrainSummary(const TrainRecord& r);

}  // namespace ts

#include "bench/train/train_transports.h"
#include "bench/train/train_plan.h"

#include <cstdio>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/split.h"
#include "base/terminal_text.h"
#include "bench/run/transports.h"
#include "bench/scale/train_point.h"
#include "bench/train/train_options.h"
#include "workloads/device_spec.h"

namespace ts {

namespace {

// The train record of `transport` among the merged records; null when its run wrote none.
const nlohmann::json* trainRecordOf(const nlohmann::json& records, const std::string& transport) {
  for (const auto& r : records)
    if (r.value("kind", "") == "train" && r.value("transport", nlohmann::json()) == transport) return &r;
  return nullptr;
}

}  // namespace

std::string transportSummary(const nlohmann::json& records, const std::vector<std::string>& transports) {
  const nlohmann::json* any = nullptr;
  for (const auto& t : transports)
    if (!any) any = trainRecordOf(records, t);
  if (!any) return "";
  const ScalingTrainFacts facts = trainFactsOf(*any);
  const int world = any->value("world_size", 1);
  std::string out = fmt::format(
      "#\n# transports side by side: {} {} {}, {} rank(s); step: the median; exposed: the communication not hidden behind "
      "compute, the median over the ranks\n",
      facts.model ? std::string(nameOf(*facts.model)) : "?", printable(facts.preset.value_or("?")), facts.layout, world);
  std::optional<std::pair<std::string, double>> first;  // the first transport that completed, and its step time
  std::string rows;
  for (const auto& t : transports) {
    const nlohmann::json* r = trainRecordOf(records, t);
    if (!r || !completedPoint(*r)) {
      const std::string why = r ? r->value("error", std::string("no timed steps")) : "the run stopped before its train record";
      rows += fmt::format("  {:<10} failed: {}\n", printable(t), printable(why));
      continue;
    }
    // The run's own figures (its rate as its own base): the step, its breakdown over the ranks, its throughput.
    const ScalingFigures f = figuresOf(*r, world, {world, throughputOf(*r)});
    if (!first) first = {printable(t), f.stepTimeUs};
    rows += fmt::format("  {:<10} {:>12.3f} {:>12.3f} {:>14.1f} {:>11.2f}x\n", printable(t), f.stepTimeUs / 1e3,
                        f.breakdown.exposedCommunication / 1e3, f.throughputPerS, f.stepTimeUs / first->second);
  }
  // The last column: each step time against the first transport's (1.25x: a quarter slower on that fabric).
  out += fmt::format("# {:<10} {:>12} {:>12} {:>14} {:>12}\n", "transport", "step(ms)", "exposed(ms)", "items/s",
                     first ? "step vs " + first->first : "");
  return out + rows;
}

int runTrainCommandLine(const TrainRunOptions& o, const std::vector<std::string>& argv) {
  if (o.plan > 0) return runTrainPlan(o, argv);
  VariantRequest req;
  req.subcommand = VariantSubcommand::kTrain;
  req.transports = splitNonEmpty(o.transports, ',');
  req.launcher = o.launcher;
  if (!variantsRequested(req)) return runTrain(o, argv);
  // Every check of the job before the first run starts: a bad flag is one line, not one failed run per transport.
  checkTrainRun(o);
  checkWarmupSteps(o.warmupSteps, o.train.steps);
  req.backend = wl::parseDeviceSpec(o.device).cuda() ? BackendKind::kNccl : BackendKind::kMpi;
  req.jsonPath = o.jsonPath;
  req.paths = {{"--trace", PathKind::kFolder},
               {"--checkpoint-dir", PathKind::kFolder},
               {"--mllog", PathKind::kFile},
               {"--dump-logits", PathKind::kFile}};
  req.summary = [transports = req.transports](const nlohmann::json& records) {
    std::printf("%s", transportSummary(records, transports).c_str());
    std::fflush(stdout);
  };
  return runVariants(req, argv);
}

}  // namespace ts

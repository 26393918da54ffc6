#include "bench/scale/scaling_record.h"

#include "bench/results/record_json.h"

namespace ts {
namespace {

void putTrain(nlohmann::json& j, const ScalingTrainFacts& t) {
  j["model"] = orNull(t.model);
  j["preset"] = orNull(t.preset);
  j["backend"] = orNull(t.backend);
  j["precision"] = orNull(t.precision);
  j["layout"] = t.layout;
}

void putFigures(nlohmann::json& j, const ScalingFigures& f) {
  j["baseline_ranks"] = f.baselineRanks;
  j["step_time_us"] = f.stepTimeUs;
  j["step_time_spread_us"] = {{"min", f.stepTimeMinUs}, {"p95", f.stepTimeP95Us}};
  j["throughput_per_s"] = f.throughputPerS;
  j["item"] = orNull(f.item);
  j["speedup"] = f.speedup;
  j["efficiency"] = f.efficiency;
  const ScalingBreakdown& b = f.breakdown;
  j["breakdown_us"] = {{"compute", b.compute},
                       {"data", b.data},
                       {"sync", b.sync},
                       {"idle", b.idle},
                       {"communication", b.communication},
                       {"exposed_communication", b.exposedCommunication}};
  if (f.overlap) j["overlap"] = orNull(*f.overlap);
  if (f.lateRanks) j["late_ranks"] = *f.lateRanks;
  if (f.pipelineBubble) j["pipeline_bubble"] = orNull(*f.pipelineBubble);
  if (f.target) {
    j["target_reached"] = f.target->reached;
    j["steps_to_target"] = f.target->reached ? nlohmann::json(f.target->steps) : nlohmann::json();
    j["time_to_target_s"] = f.target->reached ? nlohmann::json(f.target->seconds) : nlohmann::json();
  }
}

}  // namespace

nlohmann::json toJson(const ScalingRecord& r) {
  nlohmann::json j = {{"kind", "scaling"},
                      {"mode", nameOf(r.mode)},
                      {"ranks", r.ranks},
                      {"global_batch", r.globalBatch},
                      {"launcher", nameOf(r.launcher)},
                      {"completed", r.figures.has_value()},
                      {"series", r.series}};
  putUnlessEmpty(j, "label", r.label);
  putUnlessEmpty(j, "step", r.step);
  putUnlessEmpty(j, "trace", r.trace);
  if (r.train) putTrain(j, *r.train);
  if (r.figures)
    putFigures(j, *r.figures);
  else
    j["error"] = r.error;
  return j;
}

}  // namespace ts

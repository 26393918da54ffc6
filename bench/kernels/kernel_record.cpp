#include "bench/kernels/kernel_record.h"

#include "bench/results/record_json.h"

namespace ts {
namespace {

nlohmann::json toJson(const KernelRoofline& r) {
  const std::optional<std::string> rechecked =
      r.rechecked ? std::optional<std::string>(ceilingKindName(*r.rechecked)) : std::nullopt;
  return {{"bound", std::string(ceilingKindName(r.bound))},
          {"ceiling_tflops", r.ceilingTflops},
          {"ceiling_gbps", r.ceilingGbps},
          {"memory_level", std::string(memoryLevelName(r.memoryLevel))},
          {"attainable_tflops", r.attainableTflops},
          {"fraction_of_ceiling", r.fraction},
          {"rechecked_ceiling", orNull(rechecked)}};
}

}  // namespace

nlohmann::json toJson(const KernelRecord& r) {
  nlohmann::json dims = nlohmann::json::object();
  for (const auto& [k, v] : r.shape.dims) dims[k] = v;
  nlohmann::json j = {
      {"kind", "kernel"},
      {"op", r.op},
      {"shape_name", r.shape.name},
      {"shape", dims},
      {"dtype", std::string(precisionName(r.dtype))},
      {"backend", r.cuda ? "cuda" : "cpu"},
      {"flops", r.flops},
      {"bytes", r.bytes},
      {"time_us", toJson(r.time)},
      {"samples_us", r.samplesUs},
      {"tflops", r.tflops},
      {"gbps", r.gbps},
      {"arithmetic_intensity", r.intensity},
      {"roofline", r.roofline ? toJson(*r.roofline) : nlohmann::json(nullptr)},
      {"clock_mhz", orNull(r.clockMhz)},
      {"others_cpu_fraction", orNull(r.othersCpuFraction)},
      {"ceiling_suspect", r.suspect.has_value()},
      {"check",
       {{"performed", true}, {"passed", r.check.passed}, {"max_rel_err", r.check.maxRelErr}, {"tolerance", r.check.tolerance}}}};
  if (r.suspect) j["ceiling_suspect_cause"] = std::string(suspectCauseName(*r.suspect));
  if (!r.details.empty()) j["details"] = r.details;
  putUnlessEmpty(j, "label", r.label);
  putUnlessEmpty(j, "step", r.step);
  return j;
}

}  // namespace ts

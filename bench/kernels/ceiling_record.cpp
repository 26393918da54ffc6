#include "bench/kernels/ceiling_record.h"

#include <cmath>

#include "bench/results/record_json.h"

namespace ts {

nlohmann::json toJson(const KernelCeilingRecord& r) {
  const bool compute = r.ceiling == CeilingKind::kCompute;
  nlohmann::json j = {{"kind", "kernel_ceiling"},
                      {"ceiling", std::string(ceilingKindName(r.ceiling))},
                      {"value", r.value},
                      {"unit", compute ? "TFLOP/s" : "GB/s"},
                      {"source", r.source},
                      {"time_us", toJson(r.time)},
                      {"clock_mhz", orNull(r.clockMhz)},
                      {"warmup", r.warmup},
                      {"trials", r.trials},
                      {"others_cpu_fraction", orNull(r.othersCpuFraction)}};
  if (!compute) {
    j["level"] = std::string(memoryLevelName(r.level));
    j["working_set_bytes"] = r.workingSetBytes;
    j["capacity_bytes"] = std::isfinite(r.capacityBytes) ? nlohmann::json(r.capacityBytes) : nlohmann::json();
  }
  putUnlessEmpty(j, "recheck_of", r.recheckOf);
  if (r.plantedFaultScale) j["planted_fault_scale"] = *r.plantedFaultScale;
  putUnlessEmpty(j, "step", r.step);
  return j;
}

}  // namespace ts

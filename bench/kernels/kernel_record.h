#pragma once
// One compute op at one shape (kind "kernel"), as `trainscope kernels` measured it and placed it on the
// roofline. The runner fills it; toJson writes the schema's `kernel` record and kernels_table.h the
// console row, both from this.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "bench/kernels/roofline.h"
#include "bench/results/stats.h"
#include "kernels/specs/kernel_op.h"

namespace ts {

// Where the case landed: against the compute ceiling and the memory ceiling of the level its bytes
// stream at.
struct KernelRoofline {
  CeilingKind bound = CeilingKind::kCompute;
  double ceilingTflops = 0, ceilingGbps = 0;  // gbps: the memory ceiling of memoryLevel
  MemoryLevel memoryLevel = MemoryLevel::kDram;
  double attainableTflops = 0, fraction = 0;
  std::optional<CeilingKind> rechecked;  // the ceiling this case had re-measured because it landed above it
};

struct KernelRecord {
  std::string op;
  KernelShape shape;
  Precision dtype = Precision::kFloat32;
  bool cuda = false;
  double flops = 0, bytes = 0;  // the least the op must do and move
  Stats time;                   // its tflops, gbps and roofline fraction use the median
  std::vector<double> samplesUs;
  double tflops = 0, gbps = 0, intensity = 0;
  std::optional<KernelRoofline> roofline;             // none without ceilings (--no-ceilings)
  std::optional<double> clockMhz;                     // the clock it was timed at, where known
  std::optional<double> othersCpuFraction;            // CPU cases: the host's CPUs other processes took while timed
  std::optional<SuspectCause> suspect;                // above its ceiling even after re-measuring it: the likely cause
  KernelCheck check;                                  // against the float64 reference
  nlohmann::json details = nlohmann::json::object();  // the op's facts of this case (KernelCase::details)
  std::string label, step;                            // "" = absent
};

nlohmann::json toJson(const KernelRecord& r);

}  // namespace ts

#pragma once
// One measurement of one roofline ceiling (kind "kernel_ceiling"): a GEMM square (compute) or a copy at
// one level of the memory hierarchy (memory), best of its trials. CeilingSet (ceilings.h) fills one at
// each measurement, a re-check included; toJson writes the schema's `kernel_ceiling` record.
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/kernels/roofline.h"
#include "bench/results/stats.h"

namespace ts {

struct KernelCeilingRecord {
  CeilingKind ceiling = CeilingKind::kCompute;
  double value = 0;  // TFLOP/s (compute) or GB/s (memory), planted scale included
  std::string source;
  Stats time;  // of the trials; value is from the best
  std::optional<double> clockMhz;
  int warmup = 0, trials = 0;
  std::optional<double> othersCpuFraction;  // other processes' share of the CPUs meanwhile, where stated
  // Memory only:
  MemoryLevel level = MemoryLevel::kDram;
  double workingSetBytes = 0;
  double capacityBytes = std::numeric_limits<double>::infinity();  // infinite (DRAM) is written as null
  std::string recheckOf;                    // a re-measure: the figure that landed above it ("" = the first)
  std::optional<double> plantedFaultScale;  // tests only
  std::string step;                         // "" = absent
};

nlohmann::json toJson(const KernelCeilingRecord& r);

}  // namespace ts

#pragma once
// Datasheet compute peaks of the GPUs trainscope knows (dense tensor-core figures, no sparsity), for MFU
// against the datasheet. The peak scales with the SM clock: a figure at the recorded clock is the
// datasheet peak x clock / the datasheet's boost clock. Unknown GPUs have none (MFU is then against the
// measured GEMM ceiling only; no figure is made up).
#include <optional>
#include <string>

#include "base/precision.h"

namespace ts {

struct ComputePeak {
  std::string gpu;    // the table entry matched ("H100 SXM5")
  double tflops = 0;  // at the boost clock
  double boostMhz = 0;
};

std::optional<ComputePeak> datasheetPeak(const std::string& deviceName, Precision p);

}  // namespace ts

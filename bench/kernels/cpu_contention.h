#pragma once
// How much of the host's CPU time other processes took while this one measured something: the busy time
// /proc/stat counts, less this process's own (getrusage), over the time of all CPUs. A ceiling measured
// while others took a good share is the likely reason a kernel lands above it (bench/kernels/roofline.h).
#include <optional>

#include "bench/telemetry/telemetry.h"

namespace ts {

// Starts counting when made. The share is telemetry's othersBusyFraction, with this process's own time
// from getrusage.
class OthersCpuMeter {
 public:
  OthersCpuMeter();
  // Since construction; nothing where /proc/stat cannot be read or no tick passed.
  std::optional<double> fraction() const;

 private:
  std::optional<CpuTimes> start_;
  double selfStartS_ = 0;
};

}  // namespace ts

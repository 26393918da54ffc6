#pragma once
// How much of the host's CPU time other processes took while this one measured something: the busy time
// /proc/stat counts, less this process's own (getrusage), over the time of all CPUs. A ceiling measured
// while others took a good share is the likely reason a kernel lands above it (bench/roofline.h).
#include <optional>

#include "bench/telemetry.h"

namespace ts {

// In [0, 1]; /proc/stat counts in ticks of 1/ticksPerSecond s, summed over the CPUs. Nothing when no tick
// passed (too short to tell).
std::optional<double> othersCpuFraction(const CpuTimes& before, const CpuTimes& after, double selfCpuSeconds, double ticksPerSecond);

// Starts counting when made.
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

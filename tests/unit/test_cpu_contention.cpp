// Other processes' share of the CPUs: /proc/stat's busy time less this process's own, over all CPUs' time.
#include <gtest/gtest.h>

#include "bench/cpu_contention.h"

namespace ts {

TEST(CpuContention, BusyTimeLessOurOwnOverAllCpus) {
  // 2 CPUs for 1 s at 100 ticks/s: 200 ticks; 150 of them busy, 0.5 s of it ours: others took 1 of 2 s.
  EXPECT_DOUBLE_EQ(*othersCpuFraction({0, 0}, {150, 200}, 0.5, 100), 0.5);
  EXPECT_DOUBLE_EQ(*othersCpuFraction({0, 0}, {100, 200}, 1.2, 100), 0.0);  // our time rounded past the ticks: never below 0
  EXPECT_FALSE(othersCpuFraction({10, 100}, {10, 100}, 0, 100));          // no tick passed
  EXPECT_FALSE(othersCpuFraction({0, 0}, {10, 100}, 0, 0));
}

TEST(CpuContention, TheMeterReadsThisHost) {
  OthersCpuMeter meter;
  const std::optional<double> f = meter.fraction();
  if (f) {
    EXPECT_TRUE(*f >= 0 && *f <= 1);
  }
}

}  // namespace ts

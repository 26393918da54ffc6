// The host's cache sizes as sysfs states them, summed over the instances the CPUs in use reach.
#include <gtest/gtest.h>

#include "bench/kernels/host_caches.h"

namespace ts {

TEST(HostCaches, ParsesSysfsSizes) {
  EXPECT_EQ(parseCacheSize("32K"), 32u << 10);
  EXPECT_EQ(parseCacheSize("32768K"), 32u << 20);
  EXPECT_EQ(parseCacheSize("8M"), 8u << 20);
  EXPECT_EQ(parseCacheSize("4096"), 4096u);
  EXPECT_FALSE(parseCacheSize(""));
  EXPECT_FALSE(parseCacheSize("K"));
  EXPECT_FALSE(parseCacheSize("32KB"));
}

TEST(HostCaches, SumsDistinctDataInstancesPerLevel) {
  // Two cores: private L1d, L1i and L2 each, one shared L3 (seen from both CPUs, counted once).
  const std::vector<CacheInstance> seen = {
      {1, "Data", 32 << 10, "0"},      {1, "Instruction", 32 << 10, "0"}, {2, "Unified", 1 << 20, "0"},
      {3, "Unified", 32 << 20, "0-1"}, {1, "Data", 32 << 10, "1"},        {1, "Instruction", 32 << 10, "1"},
      {2, "Unified", 1 << 20, "1"},    {3, "Unified", 32 << 20, "0-1"},
  };
  const std::vector<CacheLevelSize> levels = sumCacheLevels(seen);
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].level, 1);
  EXPECT_EQ(levels[0].bytes, 64u << 10);  // instruction caches left out
  EXPECT_EQ(levels[0].instances, 2);
  EXPECT_EQ(levels[1].bytes, 2u << 20);
  EXPECT_EQ(levels[2].bytes, 32u << 20);
  EXPECT_EQ(levels[2].instances, 1);
  EXPECT_TRUE(sumCacheLevels({}).empty());
}

TEST(HostCaches, ThisHostHasTheCpusItRunsOn) {
  EXPECT_FALSE(cpusInUse().empty());
  for (const CacheLevelSize& c : hostDataCaches(cpusInUse())) EXPECT_GT(c.bytes, 0u);  // none at all is fine (no sysfs)
}

}  // namespace ts

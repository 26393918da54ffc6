// The roofline's arithmetic: which memory level's ceiling a kernel's bytes choose, how a copy sizes its
// working set for a level, where a kernel lands, and the warning for figures above their ceiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "bench/kernels/ceilings.h"
#include "bench/kernels/roofline.h"

namespace ts {
namespace {

const double kInf = std::numeric_limits<double>::infinity();
const std::vector<MemoryCeiling> kLevels = {{MemoryLevel::kL1, 64 << 10, 900},
                                            {MemoryLevel::kL2, 2 << 20, 400},
                                            {MemoryLevel::kL3, 32 << 20, 150},
                                            {MemoryLevel::kDram, kInf, 25}};

}  // namespace

TEST(Roofline, BytesChooseTheNearestLevelThatHoldsThem) {
  EXPECT_EQ(memoryCeilingFor(kLevels, 1000, true).level, MemoryLevel::kL1);
  EXPECT_EQ(memoryCeilingFor(kLevels, 64 << 10, true).level, MemoryLevel::kL1);  // exactly the capacity still fits
  EXPECT_EQ(memoryCeilingFor(kLevels, (64 << 10) + 1, true).level, MemoryLevel::kL2);
  EXPECT_EQ(memoryCeilingFor(kLevels, 5 << 20, true).level, MemoryLevel::kL3);
  EXPECT_EQ(memoryCeilingFor(kLevels, 1e12, true).level, MemoryLevel::kDram);
  EXPECT_DOUBLE_EQ(memoryCeilingFor(kLevels, 5 << 20, true).gbps, 150);
}

TEST(Roofline, DataFlushedBetweenRunsStreamsFromDram) {
  EXPECT_EQ(memoryCeilingFor(kLevels, 1000, false).level, MemoryLevel::kDram);
  const std::vector<MemoryCeiling> gpu = {{MemoryLevel::kL2, 50 << 20, 7000}, {MemoryLevel::kDram, kInf, 3000}};
  EXPECT_EQ(memoryCeilingFor(gpu, 10 << 20, true).level, MemoryLevel::kL2);
  EXPECT_EQ(memoryCeilingFor(gpu, 10 << 20, false).level, MemoryLevel::kDram);
  EXPECT_EQ(memoryCeilingFor({{MemoryLevel::kDram, kInf, 25}}, 10, true).level, MemoryLevel::kDram);  // DRAM alone
}

TEST(Roofline, CacheCopyWorkingSetFitsTheLevelAndPassesTheOneBefore) {
  EXPECT_DOUBLE_EQ(*cacheCopyWorkingSet(0, 64 << 10), 32 << 10);           // L1: half of it
  EXPECT_DOUBLE_EQ(*cacheCopyWorkingSet(64 << 10, 2 << 20), 1 << 20);      // L2: half, well past L1
  EXPECT_DOUBLE_EQ(*cacheCopyWorkingSet(96 << 20, 128 << 20), 112 << 20);  // half would fit the level before: halfway
  EXPECT_FALSE(cacheCopyWorkingSet(32 << 20, 32 << 20));                   // no larger than the one before: not measured
}

TEST(Roofline, PlacesAKernelUnderTheLowerRoof) {
  // 1 TFLOP/s compute, 100 GB/s memory: the ridge is at 10 FLOP/byte.
  const RooflinePlace lowIntensity = placeOnRoofline(0.05, 1, 1, 100);
  EXPECT_EQ(lowIntensity.bound, CeilingKind::kMemory);
  EXPECT_DOUBLE_EQ(lowIntensity.attainableTflops, 0.1);
  EXPECT_DOUBLE_EQ(lowIntensity.fraction, 0.5);
  const RooflinePlace high = placeOnRoofline(1.2, 100, 1, 100);
  EXPECT_EQ(high.bound, CeilingKind::kCompute);
  EXPECT_DOUBLE_EQ(high.fraction, 1.2);  // above its ceiling: the caller re-measures, then flags
  EXPECT_EQ(placeOnRoofline(1, 10, 1, 100).bound, CeilingKind::kCompute);  // on the ridge
}

TEST(Roofline, LikelyCauseInItsOrder) {
  EXPECT_EQ(likelySuspectCause(true, 0.9, CeilingKind::kMemory), SuspectCause::kPlantedFault);
  EXPECT_EQ(likelySuspectCause(false, 0.5, CeilingKind::kCompute), SuspectCause::kBusyHost);
  EXPECT_EQ(likelySuspectCause(false, kBusyHostFraction, CeilingKind::kMemory), SuspectCause::kBusyHost);
  EXPECT_EQ(likelySuspectCause(false, 0.01, CeilingKind::kMemory), SuspectCause::kCacheResidency);
  EXPECT_EQ(likelySuspectCause(false, std::nullopt, CeilingKind::kCompute), SuspectCause::kUnexplained);
  for (SuspectCause c : {SuspectCause::kPlantedFault, SuspectCause::kBusyHost, SuspectCause::kCacheResidency,
                         SuspectCause::kUnexplained, SuspectCause::kDatasheetMismatch})
    EXPECT_EQ(suspectCauseFromName(suspectCauseName(c)), c);
}

TEST(Roofline, OneWarningLineGroupedByCause) {
  EXPECT_EQ(suspectWarning({}), "");
  const std::string line = suspectWarning({{"gemm attn.qkv", 1.18, SuspectCause::kBusyHost},
                                           {"layernorm block.ln", 1.5, SuspectCause::kCacheResidency},
                                           {"gemm mlp.up", 1.2, SuspectCause::kBusyHost}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("# warning: 3 figure(s) above 100% of their ceiling", 0), 0u) << line;
  EXPECT_NE(line.find("gemm attn.qkv (118%), gemm mlp.up (120%): likely cause: other processes"), std::string::npos) << line;
  EXPECT_NE(line.find("layernorm block.ln (150%): likely cause: the data sat in a nearer cache level"), std::string::npos)
      << line;
  std::vector<SuspectFigure> many(kSuspectNames + 3, {"gelu mlp.gelu", 2.0, SuspectCause::kPlantedFault});
  EXPECT_NE(suspectWarning(many).find(" and 3 more: likely cause: a planted fault"), std::string::npos);
}

// Why aboveCeiling has no margin for noise (roofline.h): with the ceiling the fastest of its trials and a figure the
// median of its samples, noise alone lifts the same work above its ceiling with a chance set by the counts, not by
// the spread. For n samples (n odd, the median the h-th fastest, h = (n + 1) / 2) and m trials it is the chance that
// the h fastest of the n + m draws are all the figure's, C(n, h) / C(n + m, h): 2^-m as n grows, more for a figure of
// few samples (4% for 3). Timed here under three spreads, after the re-check (m twice the protocol's trials), for a
// figure of 21 samples (--iters 10 and --min-time-ms give most cases more).
TEST(Roofline, NoiseAloneLiftsAFigureAboveItsCeilingAsRarelyWhateverItsSpread) {
  const int m = 2 * kCeilingProtocol.trials, n = 21, h = (n + 1) / 2;
  double chance = 1;
  for (int i = 0; i < h; ++i) chance *= static_cast<double>(n - i) / (n + m - i);
  EXPECT_LT(chance, 0.005);  // under one figure in 200
  const int draws = 40000;
  for (double sigma : {0.01, 0.1, 0.5}) {  // 1% to 50% of run-to-run spread (lognormal)
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> timeUs(std::log(100.0), sigma);
    int above = 0;
    std::vector<double> samples(n);
    for (int d = 0; d < draws; ++d) {
      double fastestTrial = std::numeric_limits<double>::infinity();
      for (int t = 0; t < m; ++t) fastestTrial = std::min(fastestTrial, timeUs(rng));
      for (double& x : samples) x = timeUs(rng);
      std::nth_element(samples.begin(), samples.begin() + (h - 1), samples.end());
      // Same work: the figure's fraction of its ceiling is the ceiling's time over the figure's.
      above += aboveCeiling(fastestTrial / samples[h - 1]) ? 1 : 0;
    }
    const double rate = static_cast<double>(above) / draws;
    EXPECT_NEAR(rate, chance, 4 * std::sqrt(chance * (1 - chance) / draws)) << "sigma " << sigma;
  }
}

}  // namespace ts

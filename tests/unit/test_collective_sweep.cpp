// The sizes a collectives sweep measures: strictly increasing whole elements whatever the factor (8 B x 1.1
// must move on), the sizes a power-of-two factor always gave, and each op's rounding to what it divides
// among the ranks. References are computed here in integers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "bench/collectives/collectives_options.h"

namespace ts {
namespace {

CollectivesOptions sweep(std::uint64_t minBytes, std::uint64_t maxBytes, double factor, std::uint64_t stepBytes = 0) {
  CollectivesOptions o;
  o.minBytes = minBytes;
  o.maxBytes = maxBytes;
  o.stepFactor = factor;
  o.stepBytes = stepBytes;
  return o;
}

std::vector<std::uint64_t> bytesOf(const std::vector<CollectiveLayout>& layouts) {
  std::vector<std::uint64_t> out;
  for (const auto& l : layouts) out.push_back(l.bytes);
  return out;
}

TEST(CollectiveSweep, AFactorNearOneStillMovesOnInWholeElements) {
  // The reference in integers: the product by 11/10 rounded up to whole elements, at least one more.
  for (std::uint64_t elt : {1, 2, 4, 8}) {
    std::vector<std::uint64_t> expected;
    for (std::uint64_t s = 8; s <= 1024;) {
      expected.push_back(s);
      const std::uint64_t product = (s * 11 + 9) / 10;
      s = std::max((product + elt - 1) / elt * elt, s + elt);
    }
    const auto sizes = sweepSizes(sweep(8, 1024, 1.1), elt);
    EXPECT_EQ(sizes, expected) << elt;
    EXPECT_GT(sizes.size(), 1u);
  }
}

TEST(CollectiveSweep, APowerOfTwoFactorGivesThePowersItAlwaysGave) {
  std::vector<std::uint64_t> powers;
  for (std::uint64_t s = 8; s <= (1u << 20); s *= 2) powers.push_back(s);
  for (std::size_t elt : {1, 2, 4, 8}) EXPECT_EQ(sweepSizes(sweep(8, 1u << 20, 2), elt), powers) << elt;
  EXPECT_EQ(sweepSizes(sweep(8, 4u << 20, 4), 4),
            (std::vector<std::uint64_t>{8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288, 2097152}));
}

TEST(CollectiveSweep, TheEndsAndTheArithmeticStepAreWholeElementsToo) {
  EXPECT_EQ(sweepSizes(sweep(10, 40, 2), 4), (std::vector<std::uint64_t>{12, 24}));               // -b rounded up; 48 is past -e
  EXPECT_EQ(sweepSizes(sweep(8, 24, 2, 3), 4), (std::vector<std::uint64_t>{8, 12, 16, 20, 24}));  // 8 + 3 = 11 -> 12
  EXPECT_EQ(sweepSizes(sweep(8, 8, 2), 4), (std::vector<std::uint64_t>{8}));
  EXPECT_TRUE(sweepSizes(sweep(4, 4, 2), 8).empty());                   // no whole float64 in 4 bytes
  EXPECT_THROW(sweepSizes(sweep(8, 1u << 20, 1.0001), 4), UsageError);  // one element at a time: too many sizes
}

TEST(CollectiveSweep, EachOpRunsTheSizesItCanDivideOnceEach) {
  const std::vector<std::uint64_t> sizes = sweepSizes(sweep(8, 1024, 1.1), 4);
  for (int n : {2, 3, 4}) {
    for (const char* name : {"all_gather", "reduce_scatter", "alltoall"}) {
      // The reference: each size rounded down to whole elements per rank, the empty and repeated ones dropped.
      std::vector<std::uint64_t> expected;
      const std::uint64_t unit = 4 * static_cast<std::uint64_t>(n);
      for (std::uint64_t s : sizes)
        if (s / unit && (expected.empty() || s / unit * unit != expected.back())) expected.push_back(s / unit * unit);
      const auto layouts = sweepLayouts(findCollective(name), sizes, 4, n);
      EXPECT_EQ(bytesOf(layouts), expected) << name << " on " << n;
      for (const auto& l : layouts) EXPECT_EQ(l.count * unit, l.bytes) << name;
    }
    EXPECT_EQ(bytesOf(sweepLayouts(findCollective("all_reduce"), sizes, 4, n)), sizes);  // flat: every size as it is
  }
  // -f 2 from 8 B on 3 ranks: all_gather ran 12, 24, 60 from 16, 32, 64 before, and still does.
  EXPECT_EQ(bytesOf(sweepLayouts(findCollective("all_gather"), sweepSizes(sweep(8, 64, 2), 4), 4, 3)),
            (std::vector<std::uint64_t>{12, 24, 60}));
}

}  // namespace
}  // namespace ts

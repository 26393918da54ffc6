// The pointer chase of `trainscope links` (bench/links/pointer_chase.h), on the CPU: its span is sized from the
// GPU's L2 so that the loads reach device memory, and its chain is one cycle through every line. Issue #33:
// the chase spanned a fixed 64 MiB, within an H200's 60 MiB L2 (and beside an H100's 50 MiB), so it measured
// the L2.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "bench/links/pointer_chase.h"

namespace ts {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(PointerChase, SpansEightTimesTheL2AndNeverLessThan256MiB) {
  // cudaDevAttrL2CacheSize of an H100 (50 MiB), an H200 (60 MiB), an A100 (40 MiB), a small part, unknown.
  for (std::size_t l2 : {50 * kMiB, 60 * kMiB, 40 * kMiB, 4 * kMiB, std::size_t{0}, 62914560 + std::size_t{1}}) {
    const std::size_t span = pointerChaseSpanBytes(l2);
    EXPECT_GE(span, 8 * l2) << l2;  // at most an eighth of random lines can be in the L2
    EXPECT_GE(span, 256 * kMiB) << l2;
    EXPECT_EQ(span % kMiB, 0u) << l2;
    EXPECT_LE(span, 8 * l2 + 256 * kMiB) << l2;  // no more than it needs
  }
  EXPECT_LT(std::size_t{64} * kMiB, 8 * 60 * kMiB);  // what the fixed span was: within 8x an H200's L2
  EXPECT_EQ(pointerChaseSpanBytes(60 * kMiB), 480 * kMiB);
}

TEST(PointerChase, TheChainIsOneCycleThroughEveryLine) {
  for (std::size_t span : {std::size_t{64}, 3 * std::size_t{64}, kMiB, 5 * kMiB + 64 * 7}) {
    const std::vector<std::uint32_t> chain = randomCycle(span);
    const std::size_t elems = span / kChaseLineBytes, words = kChaseLineBytes / sizeof(std::uint32_t);
    ASSERT_EQ(chain.size(), elems * words);
    std::vector<unsigned char> seen(elems, 0);
    std::uint32_t at = 0;
    for (std::size_t k = 0; k < elems; ++k) {
      ASSERT_EQ(at % words, 0u);  // every load starts a line of its own
      ASSERT_LT(at / words, elems);
      ++seen[at / words];
      at = chain[at];
    }
    EXPECT_EQ(at, 0u) << span;  // back at the start after visiting each element once
    for (unsigned char s : seen) ASSERT_EQ(s, 1) << span;
  }
  EXPECT_THROW(randomCycle(0), Error);
  EXPECT_THROW(randomCycle(std::size_t{17} << 30), Error);  // past what 32-bit word indices reach
}

}  // namespace
}  // namespace ts

// The CPU device's cache of large host blocks (workloads/host_block_cache.h): a released block serves the next
// request it fits, zeroed, and the blocks held never exceed the most the run had in use at once.
#include "workloads/host_block_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "workloads/device.h"
#include "workloads/device_spec.h"

namespace ts::wl {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

bool allZero(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i]) return false;
  return true;
}

TEST(HostBlockCache, AReleasedBlockServesTheNextRequestOfItsSizeZeroed) {
  HostBlockCache cache;
  void* a = cache.take(kMiB);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(allZero(a, kMiB));
  std::memset(a, 0xab, kMiB);
  EXPECT_TRUE(cache.give(a));
  EXPECT_EQ(cache.cachedBytes(), kMiB);
  void* b = cache.take(kMiB);
  EXPECT_EQ(b, a);  // no new pages: the same block
  EXPECT_TRUE(allZero(b, kMiB));
  EXPECT_EQ(cache.cachedBytes(), 0u);
  EXPECT_TRUE(cache.give(b));
}

TEST(HostBlockCache, ABlockServesASmallerRequestUpToHalfItsSize) {
  HostBlockCache cache;
  void* a = cache.take(kMiB);
  void* b = cache.take(kMiB);
  cache.give(a);
  cache.give(b);
  void* small = cache.take(kMiB / 2 - 1);  // under half of either: a block of its own, and one cached block goes
  EXPECT_NE(small, a);
  EXPECT_NE(small, b);
  EXPECT_EQ(cache.cachedBytes(), kMiB);
  EXPECT_LE(cache.heldBytes(), cache.highWaterBytes());
  void* half = cache.take(kMiB / 2);  // half: the cached block
  EXPECT_TRUE(half == a || half == b);
  EXPECT_TRUE(allZero(half, kMiB / 2));
  cache.give(half);
  cache.give(small);
}

TEST(HostBlockCache, TheBlocksHeldNeverExceedTheMostInUseAtOnce) {
  HostBlockCache cache;
  void* big = cache.take(4 * kMiB);
  void* other = cache.take(kMiB);
  EXPECT_EQ(cache.highWaterBytes(), 5 * kMiB);
  cache.give(big);
  cache.give(other);  // 4 + 1 MiB were in use at once: both stay
  EXPECT_EQ(cache.cachedBytes(), 5 * kMiB);
  EXPECT_EQ(cache.take(4 * kMiB), big);
  EXPECT_EQ(cache.take(kMiB), other);
  cache.give(big);
  cache.give(other);

  HostBlockCache one;
  void* first = one.take(4 * kMiB);
  one.give(first);               // cached: 4 MiB was in use at once
  void* small = one.take(kMiB);  // the 4 MiB block is over twice its size: a new block, and the cached one goes
  EXPECT_NE(small, first);
  EXPECT_EQ(one.cachedBytes(), 0u);
  EXPECT_EQ(one.heldBytes(), kMiB);
  one.give(small);
  EXPECT_EQ(one.cachedBytes(), kMiB);

  // Many sizes, one block in use at a time: the blocks held never exceed the most in use at once.
  HostBlockCache mixed;
  const std::vector<std::size_t> sizes = {3 * kMiB, 200 << 10, 7 * kMiB, 90 << 10, 2 * kMiB, 7 * kMiB, 100 << 10};
  for (int round = 0; round < 3; ++round)
    for (std::size_t s : sizes) {
      void* p = mixed.take(s);
      ASSERT_NE(p, nullptr);
      EXPECT_LE(mixed.heldBytes(), mixed.highWaterBytes());
      mixed.give(p);
      EXPECT_LE(mixed.heldBytes(), mixed.highWaterBytes());
    }
  EXPECT_EQ(mixed.highWaterBytes(), 7 * kMiB);  // one block in use at a time, the largest 7 MiB
}

TEST(HostBlockCache, OnlyItsOwnBlocksAreTakenBack) {
  HostBlockCache cache;
  int local = 0;
  EXPECT_FALSE(cache.give(&local));
  EXPECT_FALSE(cache.give(nullptr));
}

TEST(HostBlockCache, TheCpuDeviceCountsWhatWasAskedAndReusesTheBlock) {
  auto device = Device::open(parseDeviceSpec("cpu"));
  void* a = device->allocate(3 * kMiB, MemoryKind::kParameters);
  EXPECT_EQ(device->memory().total, 3 * kMiB);
  device->release(a);
  EXPECT_EQ(device->memory().total, 0u);
  void* b = device->allocate(2 * kMiB, MemoryKind::kGradients);  // the 3 MiB block, counted as the 2 MiB asked for
  EXPECT_EQ(b, a);
  EXPECT_EQ(device->memory().total, 2 * kMiB);
  EXPECT_TRUE(allZero(b, 2 * kMiB));
  device->release(b);
  void* tiny = device->allocate(100, MemoryKind::kWorkspace);  // under the cache's size: malloc's
  EXPECT_NE(tiny, a);
  device->release(tiny);
}

}  // namespace
}  // namespace ts::wl

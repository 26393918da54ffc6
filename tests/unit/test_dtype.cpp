#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "base/dtype.h"
#include "base/error.h"

namespace ts {

TEST(DType, ParsesNamesAndAliases) {
  EXPECT_EQ(parseDType("float32"), DType::kFloat32);
  EXPECT_EQ(parseDType("float"), DType::kFloat32);
  EXPECT_EQ(parseDType("bf16"), DType::kBFloat16);
  EXPECT_EQ(parseDType("half"), DType::kFloat16);
  EXPECT_THROW(parseDType("float8"), UsageError);
  EXPECT_EQ(parseRedOp("max"), RedOp::kMax);
  EXPECT_THROW(parseRedOp("xor"), UsageError);
  for (DType t : allDTypes()) EXPECT_EQ(parseDType(dtypeName(t)), t);
}

// The compiler's own _Float16 is the reference for the software conversion (round to nearest even).
TEST(DType, HalfConversionMatchesTheCompiler) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    float f;
    const std::uint32_t b = bits(rng);
    std::memcpy(&f, &b, 4);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t refBits;
    std::memcpy(&refBits, &ref, 2);
    ASSERT_EQ(floatToHalf(f), refBits) << "f=" << f;
  }
  for (std::uint32_t h = 0; h < 65536; ++h) {
    _Float16 x;
    const auto hb = static_cast<std::uint16_t>(h);
    std::memcpy(&x, &hb, 2);
    const float ref = static_cast<float>(x);
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(halfToFloat(hb)));
      continue;
    }
    ASSERT_EQ(halfToFloat(hb), ref) << "h=" << h;
  }
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(256.0f)), 256.0f);
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(257.0f)), 256.0f);  // tie to even
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(259.0f)), 260.0f);  // tie to even, upwards
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
  for (int i = -300; i <= 300; ++i) {
    const float v = static_cast<float>(i);
    if (std::abs(i) <= 256) {
      EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(v)), v);
    }
  }
}

TEST(DType, IntegersWrapLikeDeviceArithmetic) {
  unsigned char buf[8];
  storeElement(buf, DType::kInt8, 0, 130);
  EXPECT_EQ(loadElement(buf, DType::kInt8, 0), -126);
  storeElement(buf, DType::kUInt8, 0, 256);
  EXPECT_EQ(loadElement(buf, DType::kUInt8, 0), 0);
  storeElement(buf, DType::kInt32, 0, -5);
  EXPECT_EQ(loadElement(buf, DType::kInt32, 0), -5);
  for (DType t : allDTypes()) {
    storeElement(buf, t, 0, 42);
    EXPECT_EQ(loadElement(buf, t, 0), 42) << dtypeName(t);
  }
}

}  // namespace ts

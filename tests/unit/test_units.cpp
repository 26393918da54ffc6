#include <gtest/gtest.h>

#include <limits>

#include "base/error.h"
#include "base/units.h"

namespace ts {

TEST(ParseBytes, AcceptsBinarySuffixes) {
  EXPECT_EQ(parseBytes("8", "x"), 8u);
  EXPECT_EQ(parseBytes("64K", "x"), 64u * 1024);
  EXPECT_EQ(parseBytes("4M", "x"), 4u << 20);
  EXPECT_EQ(parseBytes("1G", "x"), 1ull << 30);
  EXPECT_EQ(parseBytes("2kib", "x"), 2048u);
  EXPECT_EQ(parseBytes("3MB", "x"), 3u << 20);
  EXPECT_EQ(parseBytes("512b", "x"), 512u);
}

TEST(ParseBytes, RejectsMalformedSizesNamingTheOption) {
  for (const char* bad : {"", "M", "4X", "-1", "1.5M", "4 M", "0x10"}) {
    try {
      parseBytes(bad, "-b/--min-bytes");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("-b/--min-bytes"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parseBytes("99999999999999999999", "x"), UsageError);
  EXPECT_THROW(parseBytes("17179869184G", "x"), UsageError);  // overflows 64 bits
}

TEST(FormatBytes, UsesBinaryUnits) {
  EXPECT_EQ(formatBytes(100), "100 B");
  EXPECT_EQ(formatBytes(4 << 20), "4 MiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
}

TEST(NonFiniteReason, NamesNanAndTheInfinitiesAsTypedAndPassesEveryFiniteNumber) {
  EXPECT_EQ(nonFiniteReason(std::numeric_limits<double>::quiet_NaN(), "NaN"), "NaN is not a finite number");
  EXPECT_EQ(nonFiniteReason(std::numeric_limits<double>::infinity(), "1e999"), "1e999 is not a finite number");
  EXPECT_EQ(nonFiniteReason(-std::numeric_limits<double>::infinity(), "-inf"), "-inf is not a finite number");
  for (double ok : {0.0, -1.5, 1e300, std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()})
    EXPECT_EQ(nonFiniteReason(ok, "x"), "") << ok;
}

}  // namespace ts

#include <gtest/gtest.h>

#include "base/error.h"
#include "bench/fault_injection.h"

namespace ts {

TEST(FaultInjection, ParsesTheSpec) {
  const auto f = parseFault("hang:rank=1:op=all_gather:bytes=1K");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Fault::Kind::kHang);
  EXPECT_TRUE(f->matches(1, "all_gather", 1024));
  EXPECT_FALSE(f->matches(0, "all_gather", 1024));
  EXPECT_FALSE(f->matches(1, "all_reduce", 1024));
  EXPECT_FALSE(f->matches(1, "all_gather", 2048));
  const auto any = parseFault("corrupt:rank=0");
  ASSERT_TRUE(any);
  EXPECT_TRUE(any->matches(0, "broadcast", 8));
  EXPECT_FALSE(parseFault(""));
}

TEST(FaultInjection, RejectsMalformedSpecs) {
  EXPECT_THROW(parseFault("explode:rank=0"), UsageError);
  EXPECT_THROW(parseFault("hang"), UsageError);
  EXPECT_THROW(parseFault("hang:rank"), UsageError);
  EXPECT_THROW(parseFault("hang:rank=0:colour=red"), UsageError);
}

}  // namespace ts

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "base/error.h"
#include "bench/failures/fault_injection.h"
#include "tests/unit/test_support.h"

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

TEST(FaultInjection, CeilingFaultScalesTheMeasuringProcessOnly) {
  const auto f = parseFault("ceiling:rank=0:scale=0.25");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Fault::Kind::kCeiling);
  EXPECT_FALSE(f->inOperation());  // never fires inside a timed operation
  EXPECT_DOUBLE_EQ(plantedCeilingScale(f, 0), 0.25);
  EXPECT_DOUBLE_EQ(plantedCeilingScale(f, 1), 1.0);
  EXPECT_DOUBLE_EQ(plantedCeilingScale(parseFault("ceiling:rank=0"), 0), 0.01);  // the default
  EXPECT_DOUBLE_EQ(plantedCeilingScale(parseFault("delay:rank=0"), 0), 1.0);
  EXPECT_DOUBLE_EQ(plantedCeilingScale(std::nullopt, 0), 1.0);
  EXPECT_TRUE(parseFault("delay:rank=0")->inOperation());
  EXPECT_THROW(parseFault("ceiling:rank=0:scale=0"), UsageError);
  EXPECT_THROW(parseFault("ceiling:rank=0:scale=x"), UsageError);
}

// A frozen process (SIGSTOP, watchdog included) fires where a hang does: inside the operation.
TEST(FaultInjection, FreezeIsAnInOperationFault) {
  const auto f = parseFault("freeze:rank=2:op=all_reduce");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Fault::Kind::kFreeze);
  EXPECT_TRUE(f->inOperation());
  EXPECT_TRUE(f->matches(2, "all_reduce", 8));
}

namespace {
// The one line a spec is refused with (a test failure where it is accepted).
std::string faultError(const std::string& spec) {
  return test::usageError([&] { parseFault(spec); });
}
}  // namespace

// An unknown kind or key is one line naming the declared ones (Fault::Kind's and FaultKey's names).
TEST(FaultInjection, AnUnknownKindOrKeyNamesTheKnownOnes) {
  EXPECT_EQ(faultError("explode:rank=0"),
            "TRAINSCOPE_FAULT: unknown fault 'explode' (one of corrupt, hang, freeze, die, delay, ceiling or router)");
  EXPECT_EQ(faultError("hang:rank=0:colour=red"),
            "TRAINSCOPE_FAULT: unknown key 'colour' (one of rank, op, bytes, ms, step or scale)");
}

// A key the kind would ignore is refused (a hang given ms= is not the delay its author meant).
TEST(FaultInjection, AKeyTheKindIgnoresIsOneLine) {
  EXPECT_EQ(faultError("hang:rank=0:ms=5"), "TRAINSCOPE_FAULT: a hang fault takes no ms= (it takes rank=, op=, bytes=, step=)");
  EXPECT_EQ(faultError("ceiling:rank=0:op=all_reduce"),
            "TRAINSCOPE_FAULT: a ceiling fault takes no op= (it takes rank=, scale=)");
  EXPECT_EQ(faultError("delay:rank=0:scale=2"),
            "TRAINSCOPE_FAULT: a delay fault takes no scale= (it takes rank=, op=, bytes=, ms=, step=)");
  EXPECT_EQ(faultError("corrupt:rank=0:step=3"),
            "TRAINSCOPE_FAULT: a corrupt fault takes no step= (it takes rank=, op=, bytes=)");
  EXPECT_NO_THROW(parseFault("delay:rank=1:op=all_gather:bytes=1K:ms=20:step=2"));
}

// The kinds README.md's Testing section lists are the declared ones, each with the keys it takes (faultTakes): the doc
// left out step= when it came.
TEST(FaultInjection, TheReadmeListsTheDeclaredKindsAndKeys) {
  std::ifstream in(TRAINSCOPE_SOURCE_DIR "/README.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::size_t from = readme.find("The error-path tests plant faults through `TRAINSCOPE_FAULT`");
  ASSERT_NE(from, std::string::npos);
  const std::string paragraph = readme.substr(from, readme.find("\n\n", from) - from);
  // Each form is `kind|kind:rank=R[:key=V]...`.
  std::set<std::string> kinds;
  const std::regex form("`([a-z|]+):rank=[A-Z0-9]+((?:\\[:[a-z]+=[A-Za-z]+\\])*)`");
  const std::regex key("\\[:([a-z]+)=");
  for (std::sregex_iterator m(paragraph.begin(), paragraph.end(), form), end; m != end; ++m) {
    std::set<std::string> keys = {"rank"};
    const std::string optional = (*m)[2].str();
    for (std::sregex_iterator k(optional.begin(), optional.end(), key); k != end; ++k) keys.insert((*k)[1].str());
    std::stringstream names((*m)[1].str());
    for (std::string name; std::getline(names, name, '|');) {
      kinds.insert(name);
      const std::optional<Fault::Kind> kind = enumFromName<Fault::Kind>(name);
      ASSERT_TRUE(kind) << name;
      std::set<std::string> takes;
      for (const auto& [n, k] : EnumNames<FaultKey>::kNames)
        if (faultTakes(*kind, k)) takes.emplace(n);
      EXPECT_EQ(keys, takes) << name;
    }
  }
  std::set<std::string> declared;
  for (const auto& [name, kind] : EnumNames<Fault::Kind>::kNames) declared.emplace(name);
  EXPECT_EQ(kinds, declared);
}

TEST(FaultInjection, RejectsMalformedSpecs) {
  EXPECT_THROW(parseFault("explode:rank=0"), UsageError);
  EXPECT_THROW(parseFault("hang"), UsageError);
  EXPECT_THROW(parseFault("hang:rank"), UsageError);
  EXPECT_THROW(parseFault("hang:rank=0:colour=red"), UsageError);
}

// Whole numbers only: atoi read "rank=abc" as rank 0, which then planted the fault on the wrong process.
TEST(FaultInjection, NumbersAreWholeNumbersOrAnError) {
  for (const char* spec : {"hang:rank=abc", "hang:rank=1x", "hang:rank=-1", "hang:rank=", "hang:rank=99999999999",
                           "delay:rank=0:ms=abc", "delay:rank=0:ms=-5", "hang:rank=0:step=abc", "hang:rank=0:step=2.5"}) {
    SCOPED_TRACE(spec);
    try {
      parseFault(spec);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("must be a whole number"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parseFault("hang:rank=3:step=7")->rank, 3);
  EXPECT_EQ(parseFault("hang:rank=3:step=7")->step, 7);
  EXPECT_EQ(parseFault("delay:rank=0:ms=250")->delayMs, 250);
}

}  // namespace ts

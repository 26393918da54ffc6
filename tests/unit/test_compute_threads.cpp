// The thread policy's reading of the environment (bench/run/compute_threads.h): OMP_NUM_THREADS as OpenMP
// defines it, a list of one count per nesting level of which the first applies (trainscope runs one level).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/run/compute_threads.h"
#include "test_support.h"

namespace ts {
namespace {

// Sets (or unsets) an environment variable for one test, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ComputeThreads, OmpNumThreadsListTakesItsFirstLevel) {
  const ScopedEnv mine("TRAINSCOPE_THREADS", std::nullopt);
  for (const auto& [value, want] : {std::pair{"4,2", 4}, std::pair{"3", 3}, std::pair{"2, 8, 1", 2}, std::pair{"1,1", 1}}) {
    SCOPED_TRACE(value);
    const ScopedEnv omp("OMP_NUM_THREADS", value);
    const ComputeThreads t = decideComputeThreads(1);
    EXPECT_EQ(t.perProcess, want);
    EXPECT_STREQ(t.source, "OMP_NUM_THREADS");
  }
}

TEST(ComputeThreads, ABadLevelIsOneLineNamingTheVariable) {
  const ScopedEnv mine("TRAINSCOPE_THREADS", std::nullopt);
  for (const char* value : {"4,x", "4,", ",4", "0,2", "4,0", "two", "5000,1", "4;2"}) {
    SCOPED_TRACE(value);
    const ScopedEnv omp("OMP_NUM_THREADS", value);
    EXPECT_EQ(test::usageError([] { decideComputeThreads(1); }),
              fmt::format("OMP_NUM_THREADS={}: expected a whole number of threads from 1 to 4096, or a list of them, one "
                          "per nesting level (4,2: the first applies)",
                          value));
  }
}

TEST(ComputeThreads, TrainscopeThreadsTakesOneCountOnly) {
  const ScopedEnv mine("TRAINSCOPE_THREADS", "4,2");
  EXPECT_EQ(test::usageError([] { decideComputeThreads(1); }),
            "TRAINSCOPE_THREADS=4,2: expected a whole number of threads from 1 to 4096");
}

TEST(ComputeThreads, AValueIsEchoedWithItsControlBytesEscaped) {
  const ScopedEnv mine("TRAINSCOPE_THREADS", "4\x1b[2J");
  EXPECT_EQ(test::usageError([] { decideComputeThreads(1); }),
            "TRAINSCOPE_THREADS=4\\x1b[2J: expected a whole number of threads from 1 to 4096");
}

}  // namespace
}  // namespace ts

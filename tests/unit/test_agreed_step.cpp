// Agreed steps (comm/agreed_step.h): whatever one process's step throws, every process takes part in the
// exchange of verdicts and throws the same error, so none is left waiting in an exchange the failing one
// skipped. The processes are threads here, meeting through an in-memory bootstrap.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/host_name.h"
#include "comm/agreed_step.h"
#include "comm/bootstrap.h"

namespace ts {
namespace {

// N threads' allGather: each call waits until all N have contributed to the same round.
class ThreadWorld {
 public:
  explicit ThreadWorld(int size) : size_(size), parts_(static_cast<std::size_t>(size)) {}
  void allGather(int rank, const void* in, void* out, std::size_t bytes) {
    std::unique_lock lock(mutex_);
    const long long round = round_;
    parts_[rank].assign(static_cast<const char*>(in), static_cast<const char*>(in) + bytes);
    if (++arrived_ == size_) {
      gathered_.clear();
      for (const auto& p : parts_) gathered_.insert(gathered_.end(), p.begin(), p.end());
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return round_ != round; });
    }
    std::memcpy(out, gathered_.data(), bytes * static_cast<std::size_t>(size_));
  }
  int size() const { return size_; }

 private:
  int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<char>> parts_;
  std::vector<char> gathered_;
  int arrived_ = 0;
  long long round_ = 0;
};

class ThreadBootstrap final : public Bootstrap {
 public:
  ThreadBootstrap(ThreadWorld& w, int rank) : world_(w), rank_(rank) {}
  BootstrapKind kind() const override { return BootstrapKind::kEnv; }
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  int localRank() const override { return rank_; }
  int localSize() const override { return size(); }
  void allGather(const void* in, void* out, std::size_t bytes) override { world_.allGather(rank_, in, out, bytes); }
  void barrier() override {
    std::vector<char> out(static_cast<std::size_t>(size()));
    const char one = 1;
    allGather(&one, out.data(), 1);
  }
  [[noreturn]] void abortAll(int) override { std::abort(); }

 private:
  ThreadWorld& world_;
  int rank_;
};

// What each process ended with: "" when agreedStep returned, else "usage: <line>" or "error: <line>". After
// the step every process makes one more exchange: it is reached by all, or by none.
std::vector<std::string> runWorld(int size, const std::function<void(int rank)>& step) {
  ThreadWorld world(size);
  std::vector<std::string> ended(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      ThreadBootstrap boot(world, r);
      try {
        agreedStep(boot, [&] { step(r); });
        boot.barrier();
      } catch (const UsageError& e) {
        ended[r] = std::string("usage: ") + e.what();
      } catch (const Error& e) {
        ended[r] = std::string("error: ") + e.what();
      }
    });
  for (auto& t : threads) t.join();
  return ended;
}

TEST(AgreedStep, EveryProcessPassesWhenEveryStepDoes) {
  EXPECT_EQ(runWorld(3, [](int) {}), (std::vector<std::string>{"", "", ""}));
}

// The two-processes-on-one-GPU shape: process 1 refuses alone, process 0 would go on to an exchange.
TEST(AgreedStep, OneProcessRefusingEndsEveryProcessWithItsLine) {
  const auto ended = runWorld(2, [](int r) {
    if (r == 1) throw UsageError("no GPU 1 here");
  });
  const std::string line = "usage: process 1 on " + hostName() + ": no GPU 1 here";
  EXPECT_EQ(ended, (std::vector<std::string>{line, line}));
}

TEST(AgreedStep, EveryProcessFailingAlikeIsOneMessage) {
  const auto ended = runWorld(4, [](int) { throw Error("the same failure"); });
  EXPECT_EQ(ended, std::vector<std::string>(4, "error: the same failure"));
}

TEST(AgreedStep, AUsageErrorIsNamedBeforeOtherFailuresAndTheRestAreCounted) {
  const auto ended = runWorld(4, [](int r) {
    if (r == 0) throw Error("a stream would not start");
    if (r == 2) throw UsageError("no GPU 2 here");
    if (r == 3) throw std::runtime_error("not a ts::Error");
  });
  const std::string line = "usage: process 2 on " + hostName() + ": no GPU 2 here (2 more process(es) failed too)";
  EXPECT_EQ(ended, std::vector<std::string>(4, line));
}

TEST(AgreedStep, TheLineOfVerdictsNamesHosts) {
  using O = StepVerdict::Outcome;
  const std::vector<StepVerdict> v = {{O::kPassed, "", ""}, {O::kFailed, "out of memory", "node-b"}, {O::kPassed, "", ""}};
  const auto f = agreedFailure(v);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, "process 1 on node-b: out of memory");
  EXPECT_FALSE(f->usage);
  EXPECT_FALSE(agreedFailure({{O::kPassed, "", ""}}));
}

TEST(AgreedStep, OneProcessRunsTheStepAsItIs) {
  ThreadWorld world(1);
  ThreadBootstrap boot(world, 0);
  struct Special : UsageError {
    using UsageError::UsageError;
  };
  EXPECT_THROW(agreedStep(boot, [] { throw Special("kept as thrown"); }), Special);
}

}  // namespace
}  // namespace ts

#pragma once
// A Communicator for unit tests that moves nothing: what needs a group only to exist and its calls to
// complete (the CommTracker), and the Mesh, whose splits it records.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace ts::test {

// A group of `size` ranks as rank `rank` sees it. A split is recorded, colour and key, and gives a group
// of one rank that knows the colour and key it was split with (which ranks share it is the test's to
// work out, from every rank's splits).
class IdleCommunicator final : public Communicator {
 public:
  struct Split {
    int color = 0, key = 0;
  };
  explicit IdleCommunicator(int size, int rank = 0) : size_(size), rank_(rank) {}
  BackendKind backend() const override { return BackendKind::kMpi; }
  TimerKind timer() const override { return TimerKind::kSteadyClock; }
  int worldSize() const override { return size_; }
  int localCount() const override { return 1; }
  int rank(int) const override { return rank_; }
  std::string device(int) const override { return "cpu"; }
  bool supports(const Collective&, DType, RedOp, std::string*) const override { return true; }
  bool supportsInPlace(const Collective&) const override { return true; }
  void* allocate(int, std::size_t) override { return nullptr; }
  void release(int, void*) override {}
  void copyIn(int, void*, const void*, std::size_t) override {}
  void copyOut(int, void*, const void*, std::size_t) override {}
  void run(int, const CollectiveCall&) override {}
  std::unique_ptr<Communicator> split(int color, int key) override {
    splits_.push_back({color, key});
    auto group = std::make_unique<IdleCommunicator>(1);
    group->splitWith_ = Split{color, key};
    return group;
  }
  std::unique_ptr<PendingCollective> startSend(int, const void*, std::size_t, DType, int, int) override {
    return std::make_unique<Done>();
  }
  std::unique_ptr<PendingCollective> startRecv(int, void*, std::size_t, DType, int, int) override {
    return std::make_unique<Done>();
  }
  void synchronize(double) override {}
  TimedBatch timeBatch(int, int, const TimedOp&) override { return {}; }
  void abort() override {}

  // Every split asked of this group, in order; and how this group came from its parent (none: the world).
  const std::vector<Split>& splits() const { return splits_; }
  const std::optional<Split>& splitWith() const { return splitWith_; }

 private:
  // A send or receive that moves nothing is complete as soon as it is posted.
  struct Done final : PendingCollective {
    bool test() override { return true; }
    void wait(double) override {}
  };
  int size_, rank_;
  std::vector<Split> splits_;
  std::optional<Split> splitWith_;
};

}  // namespace ts::test

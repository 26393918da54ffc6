// The CommTracker names and sizes what a training step issues as the collectives sweep does, so the
// report can set each op against the sweep at the same bytes: the registry's name, and the whole buffer
// for the ops whose record counts it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "comm/collectives/collective.h"
#include "kernels/trace.h"
#include "tests/unit/idle_communicator.h"
#include "workloads/parallel/comm_tracker.h"

namespace ts {

TEST(CommTracker, NamesAndSizesEveryCollectiveAsTheSweepRecordsIt) {
  // docs/architecture.md: the gathered, scattered and exchanged ops count the whole buffer, nranks blocks of count.
  constexpr std::size_t kCount = 96;
  for (int n : {1, 2, 4, 8}) {
    test::IdleCommunicator comm(n);
    wl::CommTracker tracker(comm, 0, {wl::GroupKind::kTp, 3});
    for (const Collective* c : allCollectives()) tracker.run({c, nullptr, nullptr, kCount, DType::kFloat64});
    const wl::StepComm step = tracker.take();
    ASSERT_EQ(step.collectives.size(), allCollectives().size());
    for (std::size_t i = 0; i < step.collectives.size(); ++i) {
      const Collective& c = *allCollectives()[i];
      const wl::CollectiveTiming& t = step.collectives[i];
      EXPECT_EQ(t.op, c.name());
      const std::size_t blocks = c.shape() == BufferShape::kFlat ? 1 : static_cast<std::size_t>(n);
      EXPECT_EQ(t.bytes, kCount * 8 * blocks) << t.op << " n=" << n;
      // And the sweep, asked for those bytes, runs the same call.
      EXPECT_EQ(c.layout(t.bytes, 8, n).count, kCount) << t.op << " n=" << n;
      EXPECT_EQ(t.group, (wl::ProcessGroupId{wl::GroupKind::kTp, 3}));
    }
  }
}

// The group travels as its kind and index; a trace span names it ("tp3") and says the span's role.
TEST(CommTracker, ATraceNamesTheGroupItsSpansRanIn) {
  test::IdleCommunicator comm(2);
  wl::CommTracker tracker(comm, 0, {wl::GroupKind::kTp, 3});
  trace::take();
  trace::enable(true);
  tracker.run({&collectives::all_reduce(), nullptr, nullptr, 4, DType::kFloat32});
  trace::enable(false);
  const std::vector<trace::Event> events = trace::take();
  ASSERT_FALSE(events.empty());
  for (const trace::Event& e : events) EXPECT_EQ(e.args.at("group"), "tp3") << e.name;
  EXPECT_EQ(tracker.take().collectives.at(0).group, (wl::ProcessGroupId{wl::GroupKind::kTp, 3}));
}

}  // namespace ts

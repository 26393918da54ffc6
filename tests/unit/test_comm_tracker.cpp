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
      EXPECT_EQ(t.op.collective(), &c);
      EXPECT_EQ(t.op.name(), c.name());
      const std::size_t blocks = c.shape() == BufferShape::kFlat ? 1 : static_cast<std::size_t>(n);
      EXPECT_EQ(t.bytes, kCount * 8 * blocks) << c.name() << " n=" << n;
      // And the sweep, asked for those bytes, runs the same call.
      EXPECT_EQ(c.layout(t.bytes, 8, n).count, kCount) << c.name() << " n=" << n;
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

// A pipeline's send and receive are tracked as what they are, not a collective: traces and records name them send and
// recv, in the span, its Kineto "Collective name" and the timing, and no bus factor but the one link's.
TEST(CommTracker, ASendAndAReceiveAreNamedAsSuch) {
  test::IdleCommunicator comm(2);
  wl::CommTracker tracker(comm, 0, {wl::GroupKind::kPp, 0});
  float buf[4] = {};
  trace::take();
  trace::enable(true);
  tracker.wait(tracker.startSend(buf, 4, 1, 0));
  tracker.wait(tracker.startRecv(buf, 4, 1, 0));
  trace::enable(false);
  std::vector<std::string> spans, kineto;
  for (const trace::Event& e : trace::take()) {
    spans.push_back(e.name);
    if (e.args.contains("Collective name")) kineto.push_back(e.args.at("Collective name"));
  }
  EXPECT_EQ(spans, (std::vector<std::string>{"send", "wait send", "recv", "wait recv"}));
  EXPECT_EQ(kineto, (std::vector<std::string>{"send", "recv"}));
  const wl::StepComm step = tracker.take();
  ASSERT_EQ(step.collectives.size(), 2u);
  EXPECT_EQ(step.collectives[0].op.name(), "send");
  EXPECT_EQ(step.collectives[1].op.name(), "recv");
  EXPECT_EQ(step.collectives[0].op.collective(), nullptr);
  EXPECT_DOUBLE_EQ(step.collectives[1].op.busFactor(8), 1.0);
  EXPECT_FALSE(step.collectives[0].op == step.collectives[1].op);
}

}  // namespace ts

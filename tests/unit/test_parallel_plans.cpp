// The plans the parallel layouts follow, checked without any communication: how layers are cut into
// pipeline stages, the order each stage runs its micro-batches (GPipe, 1F1B), how gradients are packed
// into buckets and split among owners, how a layout is resolved against the world, and how a group's
// label reads back as its kind and size.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "workloads/parallel/buckets.h"
#include "workloads/parallel/layout.h"
#include "workloads/parallel/mesh.h"
#include "workloads/parallel/pipeline.h"

namespace ts::wl {
namespace {

double largestStage(const std::vector<double>& flops, const std::vector<StageRange>& stages) {
  double worst = 0;
  for (const auto& s : stages) worst = std::max(worst, std::accumulate(flops.begin() + s.from, flops.begin() + s.to, 0.0));
  return worst;
}

TEST(PipelineStages, BalancedCutsAreContiguousAndMinimiseTheLargestStage) {
  const std::vector<double> flops = {5, 1, 1, 1, 4, 4, 2, 6};
  for (int p = 1; p <= 4; ++p) {
    const auto stages = splitStages(flops, p, {});
    ASSERT_EQ(static_cast<int>(stages.size()), p);
    EXPECT_EQ(stages.front().from, 0u);
    EXPECT_EQ(stages.back().to, flops.size());
    for (std::size_t i = 0; i < stages.size(); ++i) {
      EXPECT_LT(stages[i].from, stages[i].to);
      if (i) {
        EXPECT_EQ(stages[i - 1].to, stages[i].from);
      }
    }
    // No contiguous cut does better: try them all.
    double best = 1e300;
    std::vector<std::size_t> cut(static_cast<std::size_t>(p) + 1, 0);
    std::function<void(int, std::size_t)> tryCuts = [&](int s, std::size_t from) {
      if (s == p - 1) {
        std::vector<StageRange> r;
        cut[static_cast<std::size_t>(s)] = from;
        for (int k = 0; k < p - 1; ++k) r.push_back({cut[k], cut[k + 1]});
        r.push_back({from, flops.size()});
        if (from < flops.size()) best = std::min(best, largestStage(flops, r));
        return;
      }
      cut[static_cast<std::size_t>(s)] = from;
      for (std::size_t next = from + 1; next < flops.size(); ++next) {
        cut[static_cast<std::size_t>(s) + 1] = next;
        tryCuts(s + 1, next);
      }
    };
    tryCuts(0, 0);
    EXPECT_DOUBLE_EQ(largestStage(flops, stages), best) << p << " stages";
  }
}

TEST(PipelineStages, ByHandAndTheErrors) {
  const std::vector<double> flops(5, 1.0);
  const auto stages = splitStages(flops, 2, {2, 3});
  EXPECT_EQ(stages[0].to, 2u);
  EXPECT_EQ(stages[1].from, 2u);
  EXPECT_THROW(splitStages(flops, 6, {}), UsageError);      // more stages than layers
  EXPECT_THROW(splitStages(flops, 2, {2, 2}), UsageError);  // adds up to 4 of 5
}

// Every micro-batch's forward and backward exactly once, each forward before its backward.
void expectComplete(const std::vector<PipeOp>& ops, int micros) {
  std::map<int, int> forwardAt, backwardAt;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto& at = ops[i].forward ? forwardAt : backwardAt;
    EXPECT_EQ(at.count(ops[i].micro), 0u);
    at[ops[i].micro] = static_cast<int>(i);
  }
  ASSERT_EQ(static_cast<int>(forwardAt.size()), micros);
  ASSERT_EQ(static_cast<int>(backwardAt.size()), micros);
  for (int m = 0; m < micros; ++m) EXPECT_LT(forwardAt[m], backwardAt[m]);
}

TEST(PipelineSchedule, GpipeRunsEveryForwardFirst) {
  for (int p = 1; p <= 4; ++p)
    for (int m = 1; m <= 6; ++m)
      for (int s = 0; s < p; ++s) {
        const auto ops = pipelineSchedule(PipelineSchedule::kGPipe, s, p, m);
        expectComplete(ops, m);
        for (int i = 0; i < m; ++i) EXPECT_TRUE(ops[static_cast<std::size_t>(i)].forward);
      }
}

TEST(PipelineSchedule, OneForwardOneBackwardKeepsAtMostStagesLeftInFlight) {
  for (int p = 1; p <= 4; ++p)
    for (int m = 1; m <= 6; ++m)
      for (int s = 0; s < p; ++s) {
        const auto ops = pipelineSchedule(PipelineSchedule::k1F1B, s, p, m);
        expectComplete(ops, m);
        int inFlight = 0, most = 0;
        for (const auto& op : ops) {
          inFlight += op.forward ? 1 : -1;
          most = std::max(most, inFlight);
        }
        EXPECT_LE(most, std::min(p - s, m)) << "stage " << s << " of " << p << ", " << m << " micro-batches";
        // Backwards in micro-batch order: the order the next stage sends their gradients.
        int last = -1;
        for (const auto& op : ops)
          if (!op.forward) {
            EXPECT_EQ(op.micro, ++last);
          }
      }
}

// The backwards that run their forward again: those whose micro-batch is not the last forward run (GPipe's first
// backward finds its state held; 1F1B's last stage runs each backward right after its forward and re-runs none, the
// stages before it re-run every one).
TEST(PipelineSchedule, ReforwardsAreTheBackwardsWhoseForwardIsNotTheLastRun) {
  auto flags = [](PipelineSchedule kind, int stage, int stages, int micros) {
    std::vector<std::pair<int, bool>> out;  // (micro, reforward) of each backward, in order
    for (const PipeOp& op : pipelineSchedule(kind, stage, stages, micros)) {
      if (op.forward)
        EXPECT_FALSE(op.reforward);
      else
        out.emplace_back(op.micro, op.reforward);
    }
    return out;
  };
  using V = std::vector<std::pair<int, bool>>;
  EXPECT_EQ(flags(PipelineSchedule::kGPipe, 0, 2, 4), (V{{3, false}, {2, true}, {1, true}, {0, true}}));
  // Stage 0 of 2: F0 F1 B0 F2 B1 F3 B2 B3: every backward finds the next micro-batch's forward in the layers.
  EXPECT_EQ(flags(PipelineSchedule::k1F1B, 0, 2, 4), (V{{0, true}, {1, true}, {2, true}, {3, true}}));
  EXPECT_EQ(flags(PipelineSchedule::k1F1B, 1, 2, 4), (V{{0, false}, {1, false}, {2, false}, {3, false}}));
  EXPECT_EQ(reforwardsPerStep(PipelineSchedule::kGPipe, 0, 2, 4), 3);
  EXPECT_EQ(reforwardsPerStep(PipelineSchedule::k1F1B, 0, 2, 4), 4);
  EXPECT_EQ(reforwardsPerStep(PipelineSchedule::k1F1B, 1, 2, 4), 0);
  // Stage 0 of 3 with 2 micro-batches: F0 F1 B0 B1: B1 follows B0, which re-ran micro-batch 0's forward.
  EXPECT_EQ(flags(PipelineSchedule::k1F1B, 0, 3, 2), (V{{0, true}, {1, true}}));
}

TEST(GradientBuckets, PackInBackwardOrderPadToThePartsAndSplitIntoPiecesThatCoverEachParameterOnce) {
  Arena arena;
  std::vector<Param> params;
  for (auto [name, n] : std::vector<std::pair<const char*, std::int64_t>>{{"a", 10}, {"b", 300}, {"c", 7}, {"d", 50}, {"e", 3}})
    params.push_back(makeParam(arena, name, {n}));
  std::vector<Param*> order;
  for (auto& p : params) order.push_back(&p);
  const int parts = 4;
  Buckets buckets(order, 200 * 4 / (1024.0 * 1024.0), parts);  // about 200 elements a bucket
  std::vector<std::string> seen;
  std::map<std::string, std::size_t> covered;
  for (Bucket& b : buckets.all()) {
    EXPECT_EQ(b.padded % parts, 0u);
    EXPECT_GE(b.padded, b.elements);
    EXPECT_LT(b.padded - b.elements, static_cast<std::size_t>(parts));
    for (const auto& s : b.slots) seen.push_back(s.param->name);
    Tensor grads = arena.tensor({static_cast<std::int64_t>(b.chunk)});
    for (int k = 0; k < parts; ++k)
      for (const Param& piece : buckets.pieces(b, k, grads)) covered[piece.name.substr(0, 1)] += piece.value.numel();
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"e", "d", "c", "b", "a"}));  // the backward's order
  EXPECT_EQ(buckets.all().size(), 3u);                                   // e+d+c | b (larger than a bucket) | a
  for (const auto& p : params) EXPECT_EQ(covered[p.name], p.value.numel()) << p.name;
}

TEST(GradientBuckets, DepositCopiesAGradientAndCompletesItsBucketOnce) {
  Arena arena;
  Param a = makeParam(arena, "a", {3}), b = makeParam(arena, "b", {2});
  a.grad.fromHost({1, 2, 3});
  b.grad.fromHost({4, 5});
  Buckets buckets({&a, &b}, 1.0, 2);
  ASSERT_EQ(buckets.all().size(), 1u);
  EXPECT_THROW(buckets.deposit(b), Error);  // no flat taken yet
  buckets.takeFlat(buckets.all()[0], arena, MemoryKind::kCommBuffers);
  EXPECT_EQ(buckets.deposit(b), nullptr);
  Bucket* done = buckets.deposit(a);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->flat.toHost(), (std::vector<float>{4, 5, 1, 2, 3, 0}));  // b first (backward order), padded to 6
  EXPECT_THROW(buckets.deposit(a), Error);                                 // twice in one backward
  buckets.startMicroBatch();
  EXPECT_EQ(buckets.deposit(a), nullptr);
}

TEST(GradientBuckets, TakenFlatsAreTheGradientsAndGivingThemBackFreesTheirMemory) {
  Arena arena;
  Param a = makeParam(arena, "a", {3}), b = makeParam(arena, "b", {5});
  const auto inUse = [&] { return arena.device().memory().inUseOf(MemoryKind::kGradients); };
  const std::size_t before = inUse();
  Buckets buckets({&a, &b}, 1.0, 4);  // 8 elements: no padding
  buckets.releaseParamGrads(arena);
  EXPECT_EQ(inUse(), before - 8 * sizeof(float));
  EXPECT_EQ(a.grad.data, nullptr);
  Bucket& bucket = buckets.all()[0];
  buckets.take(bucket, arena);
  EXPECT_EQ(inUse(), before);
  EXPECT_EQ(b.grad.data, bucket.flat.data);  // b first: the backward's order
  EXPECT_EQ(a.grad.data, bucket.flat.data + 5);
  a.grad.fromHost({1, 2, 3});  // the backward writes straight into the bucket: deposit copies nothing
  EXPECT_EQ(buckets.deposit(a), nullptr);
  EXPECT_NE(buckets.deposit(b), nullptr);
  EXPECT_EQ(bucket.flat.toHost(), (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3}));
  buckets.give(bucket, arena);
  EXPECT_EQ(inUse(), before - 8 * sizeof(float));
  EXPECT_EQ(b.grad.data, nullptr);
  EXPECT_EQ(b.grad.numel(), 5u);  // the shape stays: the layout still knows what it holds
}

TEST(Layout, ResolvesTheDataParallelSizeAndRejectsImpossibleGrids) {
  LayoutOptions o;
  o.tp = 2;
  EXPECT_EQ(resolveLayout(o, 8).dp, 4);
  o.pp = 2;
  EXPECT_EQ(resolveLayout(o, 8).dp, 2);
  EXPECT_EQ(resolveLayout(o, 8).name(), "dp=2 tp=2 pp=2 1f1b");
  EXPECT_THROW(resolveLayout(o, 6), UsageError);  // 2 x 2 does not divide 6
  o.dp = 3;
  EXPECT_THROW(resolveLayout(o, 8), UsageError);  // 3 x 2 x 2 is 12
  LayoutOptions z;
  z.zero = 4;
  EXPECT_THROW(resolveLayout(z, 2), UsageError);
  LayoutOptions ps;
  ps.sync = SyncKind::kParameterServer;
  ps.psShards = 3;
  EXPECT_THROW(resolveLayout(ps, 2), UsageError);  // more shards than servers
  ps.psShards = 2;
  EXPECT_EQ(resolveLayout(ps, 2).name(), "dp=2 ps(2)");
}

TEST(ProcessGroups, AGroupIsItsKindAndIndexAndOnlyATraceNamesIt) {
  LayoutOptions o;
  o.tp = 2;
  o.pp = 3;
  const LayoutOptions l = resolveLayout(o, 24);  // dp = 4
  // Rank 13 = (pp 1 * dp 4 + dp 2) * tp 2 + tp 1: the groups it is in (numbered by the other axes'
  // coordinates, in rank order: dp's by (tp 1, pp 1), tp's by (dp 2, pp 1), pp's by (tp 1, dp 2)), and their
  // names in a trace.
  const std::vector<MeshAxis> axes = meshAxesOf(l, 13);
  const std::vector<std::tuple<GroupKind, int, std::string>> cases = {
      {GroupKind::kDp, 3, "dp3"}, {GroupKind::kTp, 6, "tp6"}, {GroupKind::kPp, 5, "pp5"}};
  for (const auto& [kind, index, name] : cases) {
    const ProcessGroupId g{kind, groupIndexOf(axes, kind)};
    EXPECT_EQ(g, (ProcessGroupId{kind, index})) << name;
    EXPECT_EQ(traceName(g), name);
  }
  // One process: every group is the first of its kind.
  const Mesh single(resolveLayout({}, 1), nullptr);
  for (const MeshAxisSpec& axis : kMeshAxes) {
    const GroupKind kind = axis.kind;
    EXPECT_EQ(single.groupId(kind), (ProcessGroupId{kind, 0}));
    EXPECT_EQ(traceName(single.groupId(kind)), std::string(groupKindName(kind)) + "0");
  }
  // A group over a product of axes is named by its axes: dp x tp's of rank 13 is the one of pp 1.
  EXPECT_EQ(traceName(ProcessGroupId{AxisSet{GroupKind::kDp, GroupKind::kTp},
                                     groupIndexOf(axes, AxisSet{GroupKind::kDp, GroupKind::kTp})}),
            "dp-tp1");
}

TEST(Mesh, PlacesRanksInMegatronsOrderAndGroupsThoseThatDifferOnOneAxis) {
  LayoutOptions o;
  o.tp = 2;
  o.pp = 3;
  const LayoutOptions l = resolveLayout(o, 24);                   // dp = 4
  std::map<std::pair<GroupKind, int>, std::vector<int>> members;  // (kind, group index) -> ranks
  for (int rank = 0; rank < 24; ++rank) {
    const std::vector<MeshAxis> axes = meshAxesOf(l, rank);
    ASSERT_EQ(axes.size(), std::size(kMeshAxes));
    std::map<GroupKind, int> at;
    int fromStrides = 0;
    for (const MeshAxis& a : axes) {
      EXPECT_EQ(a.name, groupKindName(a.kind));
      EXPECT_EQ(a.size, groupSize(l, a.kind));
      at[a.kind] = a.coordinate;
      fromStrides += a.coordinate * a.stride;
    }
    EXPECT_EQ(fromStrides, rank);
    EXPECT_EQ(rank, (at[GroupKind::kPp] * 4 + at[GroupKind::kDp]) * 2 + at[GroupKind::kTp]) << rank;
    for (const MeshAxis& a : axes) members[{a.kind, groupIndexOf(axes, a.kind)}].push_back(rank);
  }
  // Each kind's groups partition the ranks into groups of that axis's size, numbered 0.. without gaps,
  // whose members agree on every other coordinate.
  std::size_t groups = 0;
  for (const MeshAxisSpec& axis : kMeshAxes) {
    const GroupKind kind = axis.kind;
    const int size = groupSize(l, kind);
    groups += static_cast<std::size_t>(24 / size);
    for (int g = 0; g < 24 / size; ++g) {
      const std::vector<int>& ranks = members[{kind, g}];
      ASSERT_EQ(static_cast<int>(ranks.size()), size) << groupKindName(kind) << g;
      auto otherCoordinates = [&](int rank) {
        std::vector<int> c;
        for (const MeshAxis& a : meshAxesOf(l, rank))
          if (a.kind != kind) c.push_back(a.coordinate);
        return c;
      };
      for (int r : ranks)
        EXPECT_EQ(otherCoordinates(r), otherCoordinates(ranks.front())) << groupKindName(kind) << g << " rank " << r;
    }
  }
  EXPECT_EQ(members.size(), groups);
  // Every rank lists its groups' members as they are, in the group's own rank order (the traces' "Process Group Ranks").
  for (int rank = 0; rank < 24; ++rank) {
    const std::vector<MeshAxis> axes = meshAxesOf(l, rank);
    for (const MeshAxis& a : axes) {
      const std::vector<int> ranks = groupRanksOf(axes, a.kind);
      const std::vector<int>& expected = members[{a.kind, groupIndexOf(axes, a.kind)}];
      EXPECT_EQ(ranks, expected) << groupKindName(a.kind) << " of rank " << rank;
      EXPECT_EQ(ranks[static_cast<std::size_t>(a.coordinate)], rank);
    }
  }
}

}  // namespace
}  // namespace ts::wl

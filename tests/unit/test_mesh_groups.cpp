// The Mesh's groups over products of axes (Megatron's parallel_state: the data-parallel group with context
// parallel, the expert-data-parallel group): the ranks of a group over a set of axes are those that agree on
// every coordinate outside it. Each is worked out here naively from the ranks' coordinates, and held to
// the mesh's arithmetic and to the colours and keys the Mesh splits its world with.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "tests/unit/idle_communicator.h"
#include "workloads/parallel/mesh.h"

namespace ts::wl {
namespace {

// Every non-empty set of the mesh's axes.
std::vector<AxisSet> everySet() {
  std::vector<AxisSet> out;
  for (unsigned bits = 1; bits < 1u << std::size(kMeshAxes); ++bits) {
    AxisSet s;
    for (unsigned k = 0; k < std::size(kMeshAxes); ++k)
      if (bits & 1u << k) s = s | kMeshAxes[k].kind;
    out.push_back(s);
  }
  return out;
}

LayoutOptions layoutOf(int dp, int tp, int pp, int ep = 1) {
  LayoutOptions o;
  o.dp = dp;
  o.tp = tp;
  o.pp = pp;
  o.ep = ep;
  return resolveLayout(o, dp * tp * pp * ep);
}

int worldOf(const LayoutOptions& l) { return l.dp * l.tp * l.pp * l.ep; }

// A rank's coordinates in Megatron's order, rank = ((pp_index * dp + dp_index) * ep + ep_index) * tp + tp_index:
// written out, not asked of the mesh (the layouts here have one rank on any other axis: coordinate 0).
std::map<GroupKind, int> coordinatesOf(const LayoutOptions& l, int rank) {
  return {{GroupKind::kTp, rank % l.tp},
          {GroupKind::kEp, rank / l.tp % l.ep},
          {GroupKind::kDp, rank / (l.tp * l.ep) % l.dp},
          {GroupKind::kPp, rank / (l.tp * l.ep * l.dp)}};
}

// The ranks that agree with `rank` on every axis outside `set`, ascending.
std::vector<int> naiveMembers(const LayoutOptions& l, AxisSet set, int rank) {
  const int world = worldOf(l);
  std::vector<int> out;
  for (int r = 0; r < world; ++r) {
    bool same = true;
    for (const MeshAxisSpec& a : kMeshAxes)
      if (!set.contains(a.kind) && coordinatesOf(l, r)[a.kind] != coordinatesOf(l, rank)[a.kind]) same = false;
    if (same) out.push_back(r);
  }
  return out;
}

const std::vector<LayoutOptions>& layouts() {
  static const std::vector<LayoutOptions> all = {layoutOf(2, 2, 2),    layoutOf(4, 2, 3),    layoutOf(3, 1, 2),
                                                 layoutOf(1, 4, 2),    layoutOf(2, 3, 1),    layoutOf(1, 1, 1),
                                                 layoutOf(2, 2, 2, 2), layoutOf(1, 1, 2, 3), layoutOf(3, 2, 1, 2)};
  return all;
}

TEST(MeshGroups, AGroupOverAnyAxesIsTheRanksThatAgreeOutsideThem) {
  for (const LayoutOptions& l : layouts()) {
    const int world = worldOf(l);
    for (AxisSet set : everySet()) {
      const std::string what = l.name() + " over " + axisSetName(set);
      // The groups partition the ranks; numbered in the order of their first members, without gaps.
      std::map<std::vector<int>, int> numberOf;
      for (int rank = 0; rank < world; ++rank) numberOf.emplace(naiveMembers(l, set, rank), 0);
      std::vector<std::vector<int>> byFirst;
      for (const auto& [members, n] : numberOf) byFirst.push_back(members);
      std::sort(byFirst.begin(), byFirst.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
      for (std::size_t i = 0; i < byFirst.size(); ++i) numberOf[byFirst[i]] = static_cast<int>(i);
      for (int rank = 0; rank < world; ++rank) {
        const std::vector<MeshAxis> axes = meshAxesOf(l, rank);
        const std::vector<int> members = naiveMembers(l, set, rank);
        EXPECT_EQ(groupRanksOf(axes, set), members) << what << ", rank " << rank;
        EXPECT_EQ(static_cast<int>(members.size()), groupSize(l, set)) << what;
        EXPECT_EQ(groupCoordinateOf(axes, set), std::find(members.begin(), members.end(), rank) - members.begin())
            << what << ", rank " << rank;
        EXPECT_EQ(groupIndexOf(axes, set), numberOf[members]) << what << ", rank " << rank;
      }
    }
  }
}

TEST(MeshGroups, TheMeshSplitsItsWorldIntoEachGroupWithItsColourAndRankOrder) {
  const std::vector<AxisSet> sets = everySet();
  for (const LayoutOptions& l : layouts()) {
    const int world = worldOf(l);
    std::vector<std::unique_ptr<test::IdleCommunicator>> worlds;
    std::vector<std::unique_ptr<Mesh>> meshes;  // one per rank, each split from its own view of the world
    for (int rank = 0; rank < world; ++rank) {
      worlds.push_back(std::make_unique<test::IdleCommunicator>(world, rank));
      meshes.push_back(std::make_unique<Mesh>(l, worlds.back().get(), sets));
    }
    // Splits are collective: every rank asks for the same sets in the same order. A group of one rank is no
    // split, and a group of the same ranks as one split before (a set with an axis of one rank more) shares
    // its communicator.
    const std::vector<AxisSet> order = meshes[0]->groupSets();
    EXPECT_EQ(std::set<AxisSet>(order.begin(), order.end()), std::set<AxisSet>(sets.begin(), sets.end())) << l.name();
    for (int rank = 0; rank < world; ++rank) {
      std::map<std::vector<int>, const Communicator*> byMembers;
      for (AxisSet set : sets)
        if (groupSize(l, set) > 1) {
          const auto [at, first] = byMembers.emplace(naiveMembers(l, set, rank), meshes[rank]->group(set));
          EXPECT_EQ(at->second, meshes[rank]->group(set))
              << l.name() << ": " << axisSetName(set) << " has a communicator of its own";
        }
      EXPECT_EQ(meshes[rank]->groupSets(), order) << l.name() << ", rank " << rank;
      EXPECT_EQ(worlds[rank]->splits().size(), byMembers.size()) << l.name() << ", rank " << rank;
    }
    for (AxisSet set : sets) {
      const std::string what = l.name() + " over " + axisSetName(set);
      std::map<int, std::map<int, int>> byColour;  // colour -> key -> rank
      for (int rank = 0; rank < world; ++rank) {
        const Communicator* g = meshes[rank]->group(set);
        if (groupSize(l, set) == 1) {
          EXPECT_EQ(g, nullptr) << what;
          continue;
        }
        const auto* idle = dynamic_cast<const test::IdleCommunicator*>(g);
        ASSERT_TRUE(idle && idle->splitWith()) << what;
        EXPECT_TRUE(byColour[idle->splitWith()->color].emplace(idle->splitWith()->key, rank).second)
            << what << ": two ranks with one key";
      }
      for (const auto& [colour, byKey] : byColour) {
        std::vector<int> members;
        for (const auto& [key, rank] : byKey) members.push_back(rank);
        EXPECT_EQ(members, naiveMembers(l, set, members.front())) << what << ", colour " << colour;
        EXPECT_EQ(byKey.begin()->first, 0) << what;
        EXPECT_EQ(byKey.rbegin()->first, static_cast<int>(members.size()) - 1) << what;
      }
    }
  }
}

TEST(MeshGroups, TheReplicasAndTheDataShardsAreGroupsOverTheAxesThatSayTheyAre) {
  // The mesh's own groups: each axis's, the replicas' and the data shards'.
  std::set<AxisSet> own = {kReplicaAxes, kDataAxes, kExpertReplicaAxes};
  for (const MeshAxisSpec& a : kMeshAxes) own.insert(a.kind);
  for (const LayoutOptions& l : layouts()) {
    EXPECT_EQ(l.replicas(), groupSize(l, kReplicaAxes)) << l.name();
    EXPECT_EQ(l.dataShards(), groupSize(l, kDataAxes)) << l.name();
    const int world = worldOf(l);
    for (int rank = 0; rank < world; ++rank) {
      test::IdleCommunicator w(world, rank);
      const Mesh mesh(l, &w);
      std::set<std::vector<int>> communicators;  // one per group of more than one rank, whichever sets name it
      for (AxisSet set : own)
        if (groupSize(l, set) > 1) communicators.insert(naiveMembers(l, set, rank));
      EXPECT_EQ(w.splits().size(), communicators.size()) << l.name();
      EXPECT_EQ(mesh.replicaGroup(), mesh.group(kReplicaAxes));
      EXPECT_EQ(mesh.dataGroup(), mesh.group(kDataAxes));
      const std::vector<int> replicas = naiveMembers(l, kReplicaAxes, rank), shards = naiveMembers(l, kDataAxes, rank);
      EXPECT_EQ(mesh.replicaIndex(), std::find(replicas.begin(), replicas.end(), rank) - replicas.begin()) << l.name();
      EXPECT_EQ(mesh.dataIndex(), std::find(shards.begin(), shards.end(), rank) - shards.begin()) << l.name();
      for (AxisSet set : everySet())
        if (!own.count(set)) {
          EXPECT_THROW(mesh.group(set), Error) << axisSetName(set);  // not asked for
        }
    }
  }
  // A single process: every group has one rank and none is made.
  const Mesh single(layoutOf(1, 1, 1), nullptr, everySet());
  for (AxisSet set : everySet()) EXPECT_EQ(single.group(set), nullptr) << axisSetName(set);
  EXPECT_EQ(single.replicaIndex(), 0);
}

TEST(MeshGroups, AGroupIsNamedByTheAxesItsRanksDifferOn) {
  // dp=2 tp=1 pp=2: a group over dp and tp is dp's group; its name and label are dp's, as they were before
  // the mesh had tp.
  const LayoutOptions l = layoutOf(2, 1, 2);
  for (int rank = 0; rank < 4; ++rank) {
    test::IdleCommunicator w(4, rank);
    const AxisSet dpTp{GroupKind::kDp, GroupKind::kTp};
    const Mesh mesh(l, &w, {dpTp});
    EXPECT_EQ(groupName(mesh, dpTp), "dp");
    EXPECT_EQ(traceName(mesh.groupId(dpTp)), traceName(mesh.groupId(GroupKind::kDp)));
    EXPECT_EQ(traceName(mesh.groupId(GroupKind::kDp)), "dp" + std::to_string(rank / 2));
    EXPECT_EQ(mesh.group(dpTp), mesh.group(GroupKind::kDp));
    EXPECT_EQ(traceName(mesh.groupId(AxisSet{GroupKind::kDp, GroupKind::kPp})), "dp-pp0");
    EXPECT_EQ(traceName(mesh.groupId(GroupKind::kTp)), "tp" + std::to_string(rank));  // one rank: its own name
  }
}

TEST(MeshGroups, ASetIsNamedByItsAxesInTheMeshsOrder) {
  EXPECT_EQ(axisSetName(GroupKind::kTp), "tp");
  EXPECT_EQ(axisSetName(AxisSet{GroupKind::kPp, GroupKind::kDp}), "dp-pp");
  // Each set its own name: a trace's group names tell every communicator apart.
  std::set<std::string> names;
  for (AxisSet set : everySet()) EXPECT_TRUE(names.insert(axisSetName(set)).second) << axisSetName(set);
}

TEST(MeshGroups, AnExpertsCopiesAreTheReplicasOutsideTheExpertAxes) {
  // Megatron's expert-data-parallel group: the dense weights' replicas are dp x ep, an expert's copies dp alone.
  EXPECT_EQ(kExpertAxes, AxisSet(GroupKind::kEp));
  EXPECT_EQ(kReplicaAxes, (AxisSet{GroupKind::kDp, GroupKind::kEp}));
  EXPECT_EQ(kExpertReplicaAxes, AxisSet(GroupKind::kDp));
  const LayoutOptions l = layoutOf(2, 2, 1, 2);
  EXPECT_EQ(l.replicas(), 4);
  EXPECT_EQ(l.dataShards(), 4);
  for (int rank = 0; rank < worldOf(l); ++rank) {
    const Mesh mesh(l, rank);
    EXPECT_EQ(mesh.groupRanks(kExpertAxes), naiveMembers(l, kExpertAxes, rank));
    EXPECT_EQ(mesh.groupRanks(kExpertReplicaAxes), naiveMembers(l, kExpertReplicaAxes, rank));
    EXPECT_EQ(mesh.coordinate(kExpertAxes), coordinatesOf(l, rank)[GroupKind::kEp]);
  }
}

TEST(MeshGroups, ExpertParallelismRefusesTheLayoutsThatKeepOneGroupPerParameterOnly) {
  LayoutOptions o;
  o.ep = 2;
  for (int zero : {1, 2, 3}) {  // ZeRO shards each group's state (and ZeRO-3 its parameters) over that group
    o.zero = zero;
    EXPECT_EQ(resolveLayout(o, 2).zero, zero);
  }
  o.zero = 0;
  for (SyncKind sync : {SyncKind::kParameterServer, SyncKind::kAsyncParameterServer, SyncKind::kAverage}) {
    o.sync = sync;
    EXPECT_THROW(resolveLayout(o, 2), UsageError) << nameOf(sync);
  }
  o.sync = SyncKind::kAllReduce;
  EXPECT_EQ(resolveLayout(o, 4).dp, 2);  // --dp 0 takes what --ep leaves
}

TEST(MeshGroups, ARecordedLayoutsGroupSizeCountsTheAxesItHas) {
  const nlohmann::json l = {{"dp", 4}, {"tp", 2}, {"pp", 3}};
  EXPECT_EQ(recordedGroupSize(l, kReplicaAxes), 4);
  EXPECT_EQ(recordedGroupSize(l, AxisSet{GroupKind::kDp, GroupKind::kPp}), 12);
  EXPECT_EQ(recordedGroupSize({{"dp", 2}}, AxisSet{GroupKind::kDp, GroupKind::kTp}), 2);  // written before tp existed
  EXPECT_TRUE(recordedGroupSize({{"dp", "2"}}, kReplicaAxes).is_null());
  EXPECT_TRUE(recordedGroupSize({{"dp", 0}}, kReplicaAxes).is_null());
}

}  // namespace
}  // namespace ts::wl

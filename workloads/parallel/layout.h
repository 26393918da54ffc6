#pragma once
// The parallel layout of a training run as the user gives it, and the axes it lays the ranks on.
//
// The layout's sizes (dp, tp, pp) are the user's inputs; kMeshAxes says, once, what each of them is as an
// axis of the Mesh (workloads/parallel/mesh.h): its name (the flag, the record's and the traces' field,
// the collectives' group label), its place in the rank order, and whether its ranks replicate the dense
// weights and split the data (the replicas: what the gradient sync, ZeRO, the data's shards and the
// checkpoint's copies span, whichever axes they are). Adding an axis (context or expert parallel) is one
// GroupKind, one LayoutOptions field and one row of kMeshAxes, plus its parallelism.
#include <bit>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/parallel/layout_choices.h"

namespace ts::wl {

struct LayoutOptions {
  int dp = 0;  // data-parallel ranks; 0: whatever the world leaves after the other axes
  int tp = 1, pp = 1;
  int ep = 1;    // expert-parallel ranks: each holds 1/ep of every mixture's experts (carved out of data parallelism)
  int zero = 0;  // ZeRO stage 0..3 (over the data-parallel group)
  SyncKind sync = SyncKind::kAllReduce;         // allreduce | ps | ps-async (parameter servers) | average
  int psShards = 1;                             // ps, ps-async: parameter shards, served by data-parallel ranks 0..psShards-1
  int psServers = 0;                            // ps-async: dedicated servers (the last ranks; 0: shards served by workers)
  int staleness = 0;                            // ps-async: how many updates behind a worker's step may be
  int averageEvery = 1;                         // average: updates between two averagings of the parameters
  bool averageOptimizer = false;                // average: the optimizer state averaged with them
  double bucketMb = 25;                         // gradient bucket size (MiB) for the all-reduce, reduce-scatter and reduce
  bool overlap = true;                          // launch a bucket's communication as soon as its gradients are ready
  int prefetch = 1;                             // ZeRO-3: layers whose all-gather is in flight ahead of the one computing
  SyncBatchNorm syncBn = SyncBatchNorm::kAuto;  // batch-norm statistics over the data-parallel group (resolved by the trainer)
  PipelineSchedule schedule = PipelineSchedule::k1F1B;  // pipeline: gpipe | 1f1b
  std::vector<int> ppSplit;                             // pipeline: layers per stage, by hand (empty: balanced by FLOPs)
  nlohmann::json toJson() const;
  std::string name() const;  // "dp=2 zero=1", "dp=4 ps(2)", "dp=3 ps-async(S=1, 1 server)", "single"
  // The copies of the dense weights: the product of the replicating axes' sizes (kReplicaAxes: dp x ep).
  int replicas() const;
  // The shards the global batch is split into: the product of the data axes' sizes (kDataAxes: dp x ep).
  int dataShards() const;
  // The data shards that train: less ps-async's dedicated servers.
  int workers() const { return dataShards() - (sync == SyncKind::kAsyncParameterServer ? psServers : 0); }
};

// The axes of the mesh, each the kind of group its ranks form.
enum class GroupKind { kDp, kTp, kPp, kEp };

// A set of mesh axes: a group spans their product, its ranks agreeing on every coordinate outside it
// (Megatron's data-parallel group "with context parallel", its expert-data-parallel group). One axis
// converts to the set of it, so that one-axis groups read as they always did: mesh.group(GroupKind::kTp).
class AxisSet {
 public:
  constexpr AxisSet() = default;
  constexpr AxisSet(GroupKind kind) : bits_(bit(kind)) {}  // NOLINT(google-explicit-constructor)
  constexpr AxisSet(std::initializer_list<GroupKind> kinds) {
    for (GroupKind k : kinds) bits_ |= bit(k);
  }
  constexpr bool contains(GroupKind kind) const { return (bits_ & bit(kind)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr int count() const { return std::popcount(bits_); }
  constexpr AxisSet operator|(AxisSet other) const { return fromBits(bits_ | other.bits_); }
  constexpr AxisSet operator&(AxisSet other) const { return fromBits(bits_ & other.bits_); }
  constexpr AxisSet without(AxisSet other) const { return fromBits(bits_ & ~other.bits_); }
  constexpr auto operator<=>(const AxisSet&) const = default;

 private:
  static constexpr unsigned bit(GroupKind kind) { return 1u << static_cast<unsigned>(kind); }
  static constexpr AxisSet fromBits(unsigned bits) {
    AxisSet s;
    s.bits_ = bits;
    return s;
  }
  unsigned bits_ = 0;
};

struct MeshAxisSpec {
  GroupKind kind;
  std::string_view name;     // "dp"
  int LayoutOptions::*size;  // the user's input, resolved
  // Rank order, 0 varying fastest. Megatron's: tensor-parallel ranks adjacent, then expert-parallel, then
  // data-parallel, then pipeline stages — rank = ((pp_index * dp + dp_index) * ep + ep_index) * tp + tp_index —
  // so the ranks that talk most (a tensor-parallel group, every layer; an expert-parallel group's all-to-alls,
  // every mixture) share the fastest links (one node), and pipeline stages, which exchange only activations,
  // span nodes. Expert parallelism is carved out of data parallelism (Megatron's "EP within DP").
  int nesting;
  // Whether the axis's ranks hold the same dense weights (their gradients summed, ZeRO's shards, one copy
  // written to a checkpoint): dp, and an expert or context axis's dense layers; not tp's slices or pp's stages.
  bool replicatesWeights;
  // Whether its ranks train on different samples (the data's shards, the global batch divided, batch
  // norm's statistics gathered): dp and an expert axis; not a context axis (one sample's sequence split).
  bool splitsData;
  // Whether its ranks hold different experts of each mixture (1/size of them each, exchanging tokens with
  // all-to-alls): ep alone. An expert's copies are the replicas outside such axes (kExpertReplicaAxes).
  bool shardsExperts = false;
};

// Every axis, in the order the layout's name, the record's mesh and the reports list them.
inline constexpr MeshAxisSpec kMeshAxes[] = {
    {.kind = GroupKind::kDp,
     .name = "dp",
     .size = &LayoutOptions::dp,
     .nesting = 2,
     .replicatesWeights = true,
     .splitsData = true},
    {.kind = GroupKind::kTp,
     .name = "tp",
     .size = &LayoutOptions::tp,
     .nesting = 0,
     .replicatesWeights = false,
     .splitsData = false},
    {.kind = GroupKind::kPp,
     .name = "pp",
     .size = &LayoutOptions::pp,
     .nesting = 3,
     .replicatesWeights = false,
     .splitsData = false},
    {.kind = GroupKind::kEp,
     .name = "ep",
     .size = &LayoutOptions::ep,
     .nesting = 1,
     .replicatesWeights = true,
     .splitsData = true,
     .shardsExperts = true},
};

// The axes of which a property holds.
constexpr AxisSet axesWhere(bool MeshAxisSpec::*property) {
  AxisSet s;
  for (const MeshAxisSpec& a : kMeshAxes)
    if (a.*property) s = s | a.kind;
  return s;
}
// The replicas: the group the dense weights' gradients are summed over (ZeRO shards over it, one of it
// writes the checkpoint's copy).
inline constexpr AxisSet kReplicaAxes = axesWhere(&MeshAxisSpec::replicatesWeights);
// The data's shards: the group the global batch is split over.
inline constexpr AxisSet kDataAxes = axesWhere(&MeshAxisSpec::splitsData);
// The axes that split a mixture's experts among their ranks (the expert-parallel group: the all-to-alls').
inline constexpr AxisSet kExpertAxes = axesWhere(&MeshAxisSpec::shardsExperts);
// The copies of one expert: the replicas outside the expert axes (Megatron's expert-data-parallel group), which its
// gradients are summed over and one of which writes it to a checkpoint.
inline constexpr AxisSet kExpertReplicaAxes = kReplicaAxes.without(kExpertAxes);

const MeshAxisSpec& meshAxis(GroupKind kind);
std::string_view groupKindName(GroupKind kind);  // "dp", "tp", "pp", "ep"
// A set's name: its axes' in kMeshAxes' order, joined by '-' ("dp", "dp-tp"); "" for none.
std::string axisSetName(AxisSet set);
// The ranks in a group over that set: the product of the layout's sizes on its axes.
int groupSize(const LayoutOptions& resolved, AxisSet set);
// The same of a layout as a record or a checkpoint wrote it (LayoutOptions::toJson): an axis it lacks
// counts 1 (written before the axis existed); null where a size is not a positive integer.
nlohmann::json recordedGroupSize(const nlohmann::json& layout, AxisSet set);

// dp resolved and the combination checked against the world size and itself: UsageError naming what
// is wrong (the model-dependent checks — heads, layers — come with the model).
LayoutOptions resolveLayout(LayoutOptions o, int worldSize);

}  // namespace ts::wl

#pragma once
// The parallel layout of a training run as the user gives it, and the axes it lays the ranks on.
//
// The layout's sizes (dp, tp, pp) are the user's inputs; kMeshAxes says, once, what each of them is as an
// axis of the Mesh (workloads/parallel/mesh.h): its name (the flag, the record's and the traces' field,
// the collectives' group label) and its place in the rank order. Adding an axis (context or expert
// parallel) is one GroupKind, one LayoutOptions field and one row of kMeshAxes, plus its parallelism.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/parallel/layout_choices.h"

namespace ts::wl {

struct LayoutOptions {
  int dp = 0;  // data-parallel ranks; 0: whatever the world leaves after the other axes
  int tp = 1, pp = 1;
  int zero = 0;                                 // ZeRO stage 0..3 (over the data-parallel group)
  SyncKind sync = SyncKind::kAllReduce;         // allreduce | ps | ps-async (parameter servers) | average
  int psShards = 1;                             // ps, ps-async: parameter shards, served by data-parallel ranks 0..psShards-1
  int psServers = 0;                            // ps-async: dedicated servers (the last ranks; 0: shards served by workers)
  int staleness = 0;                            // ps-async: how many updates behind a worker's step may be
  int averageEvery = 1;                         // average: updates between two averagings of the parameters
  bool averageOptimizer = false;                // average: the optimizer state averaged with them
  double bucketMb = 25;                         // gradient bucket size (MiB) for the all-reduce, reduce-scatter and reduce
  bool overlap = true;                          // launch a bucket's communication as soon as its gradients are ready
  SyncBatchNorm syncBn = SyncBatchNorm::kAuto;  // batch-norm statistics over the data-parallel group (resolved by the trainer)
  PipelineSchedule schedule = PipelineSchedule::k1F1B;  // pipeline: gpipe | 1f1b
  std::vector<int> ppSplit;                             // pipeline: layers per stage, by hand (empty: balanced by FLOPs)
  nlohmann::json toJson() const;
  std::string name() const;  // "dp=2 zero=1", "dp=4 ps(2)", "dp=3 ps-async(S=1, 1 server)", "single"
  // The data-parallel ranks that train: dp, less ps-async's dedicated servers.
  int workers() const { return dp - (sync == SyncKind::kAsyncParameterServer ? psServers : 0); }
};

// The kinds of group a training communicates in: one per axis of its mesh.
enum class GroupKind { kDp, kTp, kPp };

struct MeshAxisSpec {
  GroupKind kind;
  std::string_view name;     // "dp"
  int LayoutOptions::*size;  // the user's input, resolved
  // Rank order, 0 varying fastest. Megatron's: tensor-parallel ranks adjacent, then data-parallel, then
  // pipeline stages — rank = (pp_index * dp + dp_index) * tp + tp_index — so the ranks that talk most
  // (a tensor-parallel group, every layer) share the fastest links (one node), and pipeline stages,
  // which exchange only activations, span nodes.
  int nesting;
};

// Every axis, in the order the layout's name, the record's mesh and the reports list them.
inline constexpr MeshAxisSpec kMeshAxes[] = {
    {GroupKind::kDp, "dp", &LayoutOptions::dp, 1},
    {GroupKind::kTp, "tp", &LayoutOptions::tp, 0},
    {GroupKind::kPp, "pp", &LayoutOptions::pp, 2},
};

const MeshAxisSpec& meshAxis(GroupKind kind);
std::string_view groupKindName(GroupKind kind);  // "dp", "tp", "pp"
// The ranks in a group of that kind: the layout's size on that axis.
int groupSize(const LayoutOptions& resolved, GroupKind kind);

// dp resolved and the combination checked against the world size and itself: UsageError naming what
// is wrong (the model-dependent checks — heads, layers — come with the model).
LayoutOptions resolveLayout(LayoutOptions o, int worldSize);

}  // namespace ts::wl

#pragma once
// The parallel layout of a training run and the process grid it lays the ranks on.
//
// world = dp x tp x pp. Rank order (Megatron's): tensor-parallel ranks adjacent, then data-parallel,
// then pipeline stages —  rank = (pp_index * dp + dp_index) * tp + tp_index  — so the ranks that talk
// most (a tensor-parallel group, every layer) share the fastest links (one node), and pipeline stages,
// which exchange only activations, span nodes. Each group has its own sub-communicator.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "workloads/parallel/layout_choices.h"

namespace ts::wl {

struct LayoutOptions {
  int dp = 0;  // data-parallel ranks; 0: whatever the world leaves after tp x pp
  int tp = 1, pp = 1;
  int zero = 0;                          // ZeRO stage 0..3 (over the data-parallel group)
  SyncKind sync = SyncKind::kAllReduce;  // allreduce | ps (parameter server)
  int psShards = 1;                      // ps: parameter shards, served by data-parallel ranks 0..psShards-1
  double bucketMb = 25;                  // gradient bucket size (MiB) for the all-reduce, reduce-scatter and reduce
  bool overlap = true;                   // launch a bucket's communication as soon as its gradients are ready
  PipelineSchedule schedule = PipelineSchedule::k1F1B;  // pipeline: gpipe | 1f1b
  std::vector<int> ppSplit;                             // pipeline: layers per stage, by hand (empty: balanced by FLOPs)
  nlohmann::json toJson() const;
  std::string name() const;  // "dp=2 zero=1", "dp=4 ps(2)", "single"
};

// dp resolved and the combination checked against the world size and itself: UsageError naming what
// is wrong (the model-dependent checks — heads, layers — come with the model).
LayoutOptions resolveLayout(LayoutOptions o, int worldSize);

// The kinds of group a training communicates in; expert parallelism (ep) would be one more.
enum class GroupKind { kDp, kTp, kPp };
std::string_view groupKindName(GroupKind kind);  // "dp", "tp", "pp"
// The ranks in a group of that kind: the layout's dp, tp or pp.
int groupSize(const LayoutOptions& resolved, GroupKind kind);

class ProcessGrid {
 public:
  // `world` spans every rank of the run (null for a single process); the groups are split from it.
  ProcessGrid(const LayoutOptions& resolved, Communicator* world);
  const LayoutOptions& layout() const { return layout_; }
  int rank() const { return rank_; }
  int worldSize() const { return layout_.dp * layout_.tp * layout_.pp; }
  int dpRank() const { return dpRank_; }
  int tpRank() const { return tpRank_; }
  int ppRank() const { return ppRank_; }
  // The group's communicator; null when the group has one rank.
  Communicator* dp() const { return dp_.get(); }
  Communicator* tp() const { return tp_.get(); }
  Communicator* pp() const { return pp_.get(); }
  Communicator* world() const { return world_; }
  // Which group of that kind this rank is in, 0.. (the colour its communicator was split with).
  int groupIndex(GroupKind kind) const;

 private:
  LayoutOptions layout_;
  Communicator* world_;
  int rank_ = 0, dpRank_ = 0, tpRank_ = 0, ppRank_ = 0;
  std::unique_ptr<Communicator> dp_, tp_, pp_;
};

// How trace spans and the collectives' timings name a rank's group: its kind and which one ("dp0", "pp1",
// "tp3"), so that the ranks of one communicator can be told from those of another of the same kind.
std::string groupLabel(const ProcessGrid& grid, GroupKind kind);

struct LabelledGroup {
  GroupKind kind;
  int size;  // its ranks
};
// The group a label names (groupLabel's, or a kind alone: "dp"), its size taken from the resolved layout.
// The one reader of labels: an unknown one is an internal error, not a group to guess.
LabelledGroup groupOfLabel(const LayoutOptions& resolved, std::string_view label);

}  // namespace ts::wl

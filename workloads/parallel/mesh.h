#pragma once
// The Mesh: the ranks of a training run laid on the named axes of its layout (kMeshAxes in layout.h),
// this rank's coordinate on each, and its sub-communicators: one per axis (the ranks that differ only on
// that axis) and one per product of axes the training communicates over (the ranks that differ only on
// those axes: the replicas, the data's shards), as Megatron's parallel_state builds them. Records, traces
// and collective timings name the groups from it.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "workloads/parallel/layout.h"
#include "workloads/parallel/process_group.h"

namespace ts::wl {

// One axis as this rank sees it.
struct MeshAxis {
  GroupKind kind;
  std::string_view name;  // "dp"
  int size = 1;
  int stride = 1;      // rank = the sum over the axes of coordinate x stride
  int coordinate = 0;  // this rank's
};

// The axes of a resolved layout as rank `rank` sees them (no communication).
std::vector<MeshAxis> meshAxesOf(const LayoutOptions& resolved, int rank);
// The ranks of a group over `set` agree on every coordinate outside it. Which group over that set a rank
// placed on `axes` is in: the groups numbered in rank order with the set's axes taken out.
int groupIndexOf(const std::vector<MeshAxis>& axes, AxisSet set);
// Where the rank is in its group: the group's own rank order is the global one (for one axis, the
// rank's coordinate on it).
int groupCoordinateOf(const std::vector<MeshAxis>& axes, AxisSet set);
// The global ranks of that group, in its own rank order (what traces list as its "Process Group Ranks").
std::vector<int> groupRanksOf(const std::vector<MeshAxis>& axes, AxisSet set);

class Mesh {
 public:
  // `world` spans every rank of the run (null for a single process); the groups are split from it: each
  // axis's, the replicas' (kReplicaAxes), the data shards' (kDataAxes) and each of `products`.
  Mesh(const LayoutOptions& resolved, Communicator* world, const std::vector<AxisSet>& products = {});
  // Rank `rank`'s mesh by its shape alone: its coordinates and groups' ranks, every group null (no communicator).
  // What a plan of the layout (`train --plan`) places a rank it does not run with.
  Mesh(const LayoutOptions& resolved, int rank);
  // The layout the mesh was built from (what each axis's parallelism does: ZeRO, the pipeline schedule).
  const LayoutOptions& layout() const { return layout_; }
  // In kMeshAxes' order.
  const std::vector<MeshAxis>& axes() const { return axes_; }
  const MeshAxis& axis(GroupKind kind) const;
  // The ranks of the group over that set, and this rank's place in it (for one axis, its coordinate).
  int size(AxisSet set) const { return groupSize(layout_, set); }
  int coordinate(AxisSet set) const { return groupCoordinateOf(axes_, set); }
  // The group over that set; null when it has one rank. A set the mesh was not built with is an internal error.
  Communicator* group(AxisSet set) const;
  // The set's axes of more than one rank: the ones its group's ranks differ on.
  AxisSet spanned(AxisSet set) const;
  // Which group over that set this rank is in, 0.. (the colour its communicator was split with).
  int groupIndex(AxisSet set) const { return groupIndexOf(axes_, set); }
  std::vector<int> groupRanks(AxisSet set) const { return groupRanksOf(axes_, set); }
  // The group over that set as a collective's timing and trace carry it: its name's axes (spanned's, or the set's own
  // where it has none) and which group it is.
  ProcessGroupId groupId(AxisSet set) const;
  // Every set the mesh has a group over, in the order they were asked for (two may share one communicator).
  std::vector<AxisSet> groupSets() const;
  // The replicas of this rank's dense weights (the gradient sync's group) and the ranks that share the
  // global batch with it: groups over kReplicaAxes and kDataAxes.
  Communicator* replicaGroup() const { return group(kReplicaAxes); }
  int replicaIndex() const { return coordinate(kReplicaAxes); }
  Communicator* dataGroup() const { return group(kDataAxes); }
  int dataIndex() const { return coordinate(kDataAxes); }
  int rank() const { return rank_; }
  int worldSize() const;
  Communicator* world() const { return world_; }
  // [{"name", "size", "stride"}, ...]: the mesh as the train record and the traces carry it.
  nlohmann::json toJson() const;

 private:
  LayoutOptions layout_;
  Communicator* world_;
  int rank_ = 0;
  std::vector<MeshAxis> axes_;
  struct Group {
    AxisSet set;
    Communicator* comm;  // one of owned_, or null
  };
  std::vector<Group> groups_;  // in the order they were asked for
  std::vector<std::unique_ptr<Communicator>> owned_;
};

// This rank's coordinate on each axis, as records and traces name it: "dp_rank", "tp_rank", ...
std::string coordinateField(const MeshAxis& axis);

// A group's name: its axes of more than one rank ("dp", "dp-tp"; the set's own where it has none), so that
// a layout's records and traces read the same whichever axes of one rank the mesh declares.
std::string groupName(const Mesh& mesh, AxisSet set);

}  // namespace ts::wl

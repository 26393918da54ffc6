#pragma once
// The Mesh: the ranks of a training run laid on the named axes of its layout (kMeshAxes in layout.h),
// this rank's coordinate on each, and one sub-communicator per axis: the group of ranks that differ only
// on that axis. Records, traces and collective timings name the axes from it.
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
// Which group of that kind a rank placed on `axes` is in: the ranks of a group agree on every coordinate
// but their own axis's, and are numbered in rank order with that axis taken out.
int groupIndexOf(const std::vector<MeshAxis>& axes, GroupKind kind);
// The global ranks of that group, in its own rank order (what traces list as its "Process Group Ranks").
std::vector<int> groupRanksOf(const std::vector<MeshAxis>& axes, GroupKind kind);

class Mesh {
 public:
  // `world` spans every rank of the run (null for a single process); the axes' groups are split from it.
  Mesh(const LayoutOptions& resolved, Communicator* world);
  // The layout the mesh was built from (what each axis's parallelism does: ZeRO, the pipeline schedule).
  const LayoutOptions& layout() const { return layout_; }
  // In kMeshAxes' order.
  const std::vector<MeshAxis>& axes() const { return axes_; }
  const MeshAxis& axis(GroupKind kind) const;
  int size(GroupKind kind) const { return axis(kind).size; }
  int coordinate(GroupKind kind) const { return axis(kind).coordinate; }
  // The axis's group; null when it has one rank.
  Communicator* group(GroupKind kind) const;
  // Which group of that kind this rank is in, 0.. (the colour its communicator was split with).
  int groupIndex(GroupKind kind) const { return groupIndexOf(axes_, kind); }
  ProcessGroupId groupId(GroupKind kind) const { return {kind, groupIndex(kind)}; }
  std::vector<int> groupRanks(GroupKind kind) const { return groupRanksOf(axes_, kind); }
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
  std::vector<std::unique_ptr<Communicator>> groups_;  // one per axis, in axes_' order
};

// This rank's coordinate on each axis, as records and traces name it: "dp_rank", "tp_rank", ...
std::string coordinateField(const MeshAxis& axis);

}  // namespace ts::wl

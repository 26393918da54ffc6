#pragma once
// Which process group of the mesh a collective runs in: the kind of group (the axis it spans) and which one
// of that kind. CommTracker and the collectives' timings carry it as it is; its text ("dp0") is made only
// where a trace writes it.
#include <string>

#include "workloads/parallel/layout.h"

namespace ts::wl {

struct ProcessGroupId {
  GroupKind kind = GroupKind::kDp;
  int index = 0;  // which group of that kind (Mesh::groupIndex: the colour its communicator was split with)
  bool operator==(const ProcessGroupId&) const = default;
};

// "dp0", "tp1", "pp0": how trace spans name the group, so that the ranks of one communicator can be told
// from those of another of the same kind (and the trace's process groups are listed under it).
inline std::string traceName(const ProcessGroupId& g) { return std::string(groupKindName(g.kind)) + std::to_string(g.index); }

}  // namespace ts::wl

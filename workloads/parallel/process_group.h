#pragma once
// Which process group of the mesh a collective runs in: the axes it spans (one, or a product such as dp x ep) and
// which group over those axes. CommTracker and the collectives' timings carry it as it is; its text ("dp0") is made only
// where a trace writes it.
#include <string>

#include "workloads/parallel/layout.h"

namespace ts::wl {

struct ProcessGroupId {
  AxisSet axes = GroupKind::kDp;  // its axes of more than one rank (Mesh::groupId)
  int index = 0;                  // which group over them (Mesh::groupIndex: the colour its communicator was split with)
  bool operator==(const ProcessGroupId&) const = default;
};

// "dp0", "tp1", "dp-ep0": how trace spans name the group, so that the ranks of one communicator can be told
// from those of another over the same axes (and the trace's process groups are listed under it).
inline std::string traceName(const ProcessGroupId& g) { return axisSetName(g.axes) + std::to_string(g.index); }

}  // namespace ts::wl

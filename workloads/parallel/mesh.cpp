#include "workloads/parallel/mesh.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {
namespace {

const MeshAxis& findAxis(const std::vector<MeshAxis>& axes, GroupKind kind) {
  for (const MeshAxis& a : axes)
    if (a.kind == kind) return a;
  throw Error(fmt::format("internal: the mesh has no {} axis", groupKindName(kind)));
}

}  // namespace

std::vector<MeshAxis> meshAxesOf(const LayoutOptions& resolved, int rank) {
  std::vector<MeshAxis> axes;
  for (const MeshAxisSpec& s : kMeshAxes) axes.push_back({s.kind, s.name, resolved.*s.size});
  std::vector<MeshAxis*> innermostFirst;
  for (MeshAxis& a : axes) innermostFirst.push_back(&a);
  std::sort(innermostFirst.begin(), innermostFirst.end(),
            [](const MeshAxis* a, const MeshAxis* b) { return meshAxis(a->kind).nesting < meshAxis(b->kind).nesting; });
  int stride = 1;
  for (MeshAxis* a : innermostFirst) {
    a->stride = stride;
    stride *= a->size;
  }
  for (MeshAxis& a : axes) a.coordinate = rank / a.stride % a.size;
  return axes;
}

int groupIndexOf(const std::vector<MeshAxis>& axes, GroupKind kind) {
  const MeshAxis& own = findAxis(axes, kind);
  int index = 0;
  for (const MeshAxis& a : axes)
    if (a.kind != kind) index += a.coordinate * (a.stride > own.stride ? a.stride / own.size : a.stride);
  return index;
}

std::vector<int> groupRanksOf(const std::vector<MeshAxis>& axes, GroupKind kind) {
  const MeshAxis& own = findAxis(axes, kind);
  int first = 0;  // the member at coordinate 0 of this axis: every other coordinate as this rank's
  for (const MeshAxis& a : axes)
    if (a.kind != kind) first += a.coordinate * a.stride;
  std::vector<int> ranks;
  for (int c = 0; c < own.size; ++c) ranks.push_back(first + c * own.stride);
  return ranks;
}

Mesh::Mesh(const LayoutOptions& resolved, Communicator* world)
    : layout_(resolved), world_(world), rank_(world ? world->rank(0) : 0), axes_(meshAxesOf(resolved, rank_)) {
  const int size = world ? world->worldSize() : 1;
  if (size != worldSize())
    throw Error(fmt::format("internal: a mesh of {} ({} ranks) over {} ranks", layout_.name(), worldSize(), size));
  // Every rank takes part in every split (MPI_Comm_split and ncclCommSplit are collective), in one order.
  for (const MeshAxis& a : axes_) {
    std::unique_ptr<Communicator> c = world ? world->split(groupIndex(a.kind), a.coordinate) : nullptr;
    groups_.push_back(a.size > 1 ? std::move(c) : nullptr);
  }
}

const MeshAxis& Mesh::axis(GroupKind kind) const { return findAxis(axes_, kind); }

Communicator* Mesh::group(GroupKind kind) const { return groups_[static_cast<std::size_t>(&axis(kind) - axes_.data())].get(); }

int Mesh::worldSize() const {
  int n = 1;
  for (const MeshAxis& a : axes_) n *= a.size;
  return n;
}

nlohmann::json Mesh::toJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const MeshAxis& a : axes_) out.push_back({{"name", a.name}, {"size", a.size}, {"stride", a.stride}});
  return out;
}

std::string coordinateField(const MeshAxis& axis) { return fmt::format("{}_rank", axis.name); }

}  // namespace ts::wl

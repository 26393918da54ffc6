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

// A rank's place among the combinations of the chosen axes' coordinates, counted in rank order: each
// chosen axis's coordinate times the sizes of the chosen axes nested inside it. (Axes of equal stride:
// all but the outermost have one rank, so their coordinate is 0 and their size 1 either way.)
int mixedRadix(const std::vector<MeshAxis>& axes, AxisSet chosen, bool inside) {
  int index = 0;
  for (const MeshAxis& a : axes) {
    if (chosen.contains(a.kind) != inside) continue;
    int below = 1;
    for (const MeshAxis& b : axes)
      if (chosen.contains(b.kind) == inside && b.stride < a.stride) below *= b.size;
    index += a.coordinate * below;
  }
  return index;
}

// The sets a mesh has groups over: each axis, the replicas', the data shards', an expert's replicas' and `products`, in that
// order.
std::vector<AxisSet> groupSetsOf(const std::vector<MeshAxis>& axes, const std::vector<AxisSet>& products) {
  std::vector<AxisSet> sets;
  for (const MeshAxis& a : axes) sets.push_back(a.kind);
  sets.push_back(kReplicaAxes);
  sets.push_back(kDataAxes);
  sets.push_back(kExpertReplicaAxes);
  sets.insert(sets.end(), products.begin(), products.end());
  return sets;
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

int groupIndexOf(const std::vector<MeshAxis>& axes, AxisSet set) { return mixedRadix(axes, set, false); }

int groupCoordinateOf(const std::vector<MeshAxis>& axes, AxisSet set) { return mixedRadix(axes, set, true); }

std::vector<int> groupRanksOf(const std::vector<MeshAxis>& axes, AxisSet set) {
  int first = 0;  // the member at coordinate 0 on the set's axes: every other coordinate as this rank's
  std::vector<const MeshAxis*> inner;
  for (const MeshAxis& a : axes)
    if (set.contains(a.kind))
      inner.push_back(&a);
    else
      first += a.coordinate * a.stride;
  std::sort(inner.begin(), inner.end(), [](const MeshAxis* a, const MeshAxis* b) { return a->stride < b->stride; });
  int size = 1;
  for (const MeshAxis* a : inner) size *= a->size;
  std::vector<int> ranks;
  for (int member = 0; member < size; ++member) {
    int rank = first, rest = member;
    for (const MeshAxis* a : inner) {
      rank += rest % a->size * a->stride;
      rest /= a->size;
    }
    ranks.push_back(rank);
  }
  return ranks;
}

Mesh::Mesh(const LayoutOptions& resolved, int rank)
    : layout_(resolved), world_(nullptr), rank_(rank), axes_(meshAxesOf(resolved, rank)) {
  if (rank < 0 || rank >= worldSize())
    throw Error(fmt::format("internal: rank {} of a mesh of {} ({} ranks)", rank, layout_.name(), worldSize()));
  for (AxisSet set : groupSetsOf(axes_, {})) groups_.push_back({set, nullptr});
}

Mesh::Mesh(const LayoutOptions& resolved, Communicator* world, const std::vector<AxisSet>& products)
    : layout_(resolved), world_(world), rank_(world ? world->rank(0) : 0), axes_(meshAxesOf(resolved, rank_)) {
  const int ranks = world ? world->worldSize() : 1;
  if (ranks != worldSize())
    throw Error(fmt::format("internal: a mesh of {} ({} ranks) over {} ranks", layout_.name(), worldSize(), ranks));
  const std::vector<AxisSet> sets = groupSetsOf(axes_, products);
  // Every rank takes part in every split (MPI_Comm_split and ncclCommSplit are collective), in one order.
  // A group's ranks are those of its axes of more than one rank: a group of one rank is no communicator,
  // and one of the same ranks as a group split before (the replicas' when they are dp's) shares its
  // communicator. Which sets those are follows from the layout alone, the same on every rank.
  for (AxisSet set : sets) {
    if (set.empty()) throw Error("internal: a process group over no mesh axis");
    if (std::any_of(groups_.begin(), groups_.end(), [&](const Group& g) { return g.set == set; })) continue;
    const AxisSet ranks = spanned(set);
    const auto same = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return spanned(g.set) == ranks; });
    if (ranks.empty() || !world) {
      groups_.push_back({set, nullptr});
    } else if (same != groups_.end()) {
      groups_.push_back({set, same->comm});
    } else {
      owned_.push_back(world->split(groupIndex(set), coordinate(set)));
      groups_.push_back({set, owned_.back().get()});
    }
  }
}

AxisSet Mesh::spanned(AxisSet set) const {
  AxisSet out;
  for (const MeshAxis& a : axes_)
    if (set.contains(a.kind) && a.size > 1) out = out | a.kind;
  return out;
}

const MeshAxis& Mesh::axis(GroupKind kind) const { return findAxis(axes_, kind); }

Communicator* Mesh::group(AxisSet set) const {
  for (const Group& g : groups_)
    if (g.set == set) return g.comm;
  throw Error(fmt::format("internal: the mesh has no process group over '{}'", axisSetName(set)));
}

std::vector<AxisSet> Mesh::groupSets() const {
  std::vector<AxisSet> out;
  for (const Group& g : groups_) out.push_back(g.set);
  return out;
}

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

ProcessGroupId Mesh::groupId(AxisSet set) const {
  const AxisSet ranks = spanned(set);
  return {ranks.empty() ? set : ranks, groupIndex(set)};
}

std::string groupName(const Mesh& mesh, AxisSet set) { return axisSetName(mesh.groupId(set).axes); }

}  // namespace ts::wl

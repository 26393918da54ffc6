#include "workloads/parallel/layout.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

nlohmann::json LayoutOptions::toJson() const {
  const bool ps = sync == SyncKind::kParameterServer;
  return {{"dp", dp},
          {"tp", tp},
          {"pp", pp},
          {"zero", zero},
          {"sync", nameOf(sync)},
          {"ps_shards", ps ? nlohmann::json(psShards) : nlohmann::json()},
          {"bucket_mb", bucketMb},
          {"overlap", overlap},
          {"schedule", pp > 1 ? nlohmann::json(nameOf(schedule)) : nlohmann::json()},
          {"pp_split", ppSplit},
          {"name", name()}};
}

std::string LayoutOptions::name() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (dp > 1) add(fmt::format("dp={}", dp));
  if (tp > 1) add(fmt::format("tp={}", tp));
  if (pp > 1) add(fmt::format("pp={}", pp));
  if (zero > 0) add(fmt::format("zero={}", zero));
  if (sync == SyncKind::kParameterServer) add(fmt::format("ps({})", psShards));
  if (pp > 1) add(std::string(nameOf(schedule)));
  if (dp > 1 && !overlap) add("no-overlap");
  return s.empty() ? "single" : s;
}

LayoutOptions resolveLayout(LayoutOptions o, int worldSize) {
  if (o.tp < 1) throw UsageError(fmt::format("--tp {}: must be at least 1", o.tp));
  if (o.pp < 1) throw UsageError(fmt::format("--pp {}: must be at least 1", o.pp));
  if (o.dp < 0) throw UsageError(fmt::format("--dp {}: must be at least 1 (or 0: the ranks left by --tp and --pp)", o.dp));
  if (o.dp == 0) {
    if (worldSize % (o.tp * o.pp))
      throw UsageError(fmt::format("--tp {} x --pp {} does not divide the {} process(es) of this run", o.tp, o.pp, worldSize));
    o.dp = worldSize / (o.tp * o.pp);
  }
  if (o.dp * o.tp * o.pp != worldSize)
    throw UsageError(fmt::format("--dp {} x --tp {} x --pp {} = {} processes, but this run has {}{}", o.dp, o.tp, o.pp,
                                 o.dp * o.tp * o.pp, worldSize, worldSize == 1 ? " (launch with mpirun -np N)" : ""));
  const bool ps = o.sync == SyncKind::kParameterServer;
  if (o.pp > 1 && ps)
    throw UsageError("--sync ps with --pp: the parameter server serves whole models, not pipeline stages, in this version");
  if (o.tp > 1 && ps)
    throw UsageError(
        "--sync ps with --tp: the parameter server serves whole models, not tensor-parallel slices, in this version");
  if (!o.ppSplit.empty() && static_cast<int>(o.ppSplit.size()) != o.pp)
    throw UsageError(fmt::format("--pp-split gives {} stage(s), but --pp is {}", o.ppSplit.size(), o.pp));
  for (int n : o.ppSplit)
    if (n < 1) throw UsageError(fmt::format("--pp-split: a stage of {} layers (each needs at least 1)", n));
  if (o.zero < 0 || o.zero > 3) throw UsageError(fmt::format("--zero {}: expected 0, 1, 2 or 3", o.zero));
  if (ps && o.zero > 0)
    throw UsageError("--sync ps shards the optimizer on its servers already; it does not combine with --zero");
  if (ps && (o.psShards < 1 || o.psShards > o.dp))
    throw UsageError(
        fmt::format("--ps-shards {}: must be between 1 and the {} data-parallel rank(s) that serve them", o.psShards, o.dp));
  if (!(o.bucketMb > 0)) throw UsageError(fmt::format("--bucket-mb {}: must be positive", o.bucketMb));
  return o;
}

ProcessGrid::ProcessGrid(const LayoutOptions& resolved, Communicator* world) : layout_(resolved), world_(world) {
  const int dp = layout_.dp, tp = layout_.tp, pp = layout_.pp;
  const int size = world ? world->worldSize() : 1;
  if (size != dp * tp * pp) throw Error(fmt::format("internal: a grid of {}x{}x{} over {} ranks", dp, tp, pp, size));
  rank_ = world ? world->rank(0) : 0;
  tpRank_ = rank_ % tp;
  dpRank_ = (rank_ / tp) % dp;
  ppRank_ = rank_ / (tp * dp);
  if (!world) return;
  // Every rank takes part in every split (MPI_Comm_split and ncclCommSplit are collective), in one order.
  auto group = [&](GroupKind kind, int key) {
    std::unique_ptr<Communicator> c = world->split(groupIndex(kind), key);
    return groupSize(layout_, kind) > 1 ? std::move(c) : nullptr;
  };
  dp_ = group(GroupKind::kDp, dpRank_);
  tp_ = group(GroupKind::kTp, tpRank_);
  pp_ = group(GroupKind::kPp, ppRank_);
}

int ProcessGrid::groupIndex(GroupKind kind) const {
  // The ranks of a group agree on every coordinate but their own kind's.
  switch (kind) {
    case GroupKind::kDp:
      return ppRank_ * layout_.tp + tpRank_;
    case GroupKind::kTp:
      return ppRank_ * layout_.dp + dpRank_;
    case GroupKind::kPp:
      return dpRank_ * layout_.tp + tpRank_;
  }
  throw Error("internal: unknown group kind");
}

namespace {
constexpr GroupKind kGroupKinds[] = {GroupKind::kDp, GroupKind::kTp, GroupKind::kPp};
}  // namespace

std::string_view groupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kPp:
      return "pp";
  }
  throw Error("internal: unknown group kind");
}

int groupSize(const LayoutOptions& resolved, GroupKind kind) {
  switch (kind) {
    case GroupKind::kDp:
      return resolved.dp;
    case GroupKind::kTp:
      return resolved.tp;
    case GroupKind::kPp:
      return resolved.pp;
  }
  throw Error("internal: unknown group kind");
}

std::string groupLabel(const ProcessGrid& grid, GroupKind kind) {
  return fmt::format("{}{}", groupKindName(kind), grid.groupIndex(kind));
}

LabelledGroup groupOfLabel(const LayoutOptions& resolved, std::string_view label) {
  for (GroupKind kind : kGroupKinds) {
    const std::string_view name = groupKindName(kind);
    if (label.substr(0, name.size()) != name) continue;
    const std::string_view index = label.substr(name.size());
    if (std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return {kind, groupSize(resolved, kind)};
  }
  throw Error(fmt::format("internal: '{}' names no process group (dp, tp or pp, and an index)", label));
}

}  // namespace ts::wl

#include "workloads/parallel/layout.h"

#include <algorithm>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

namespace {

// The axis that takes the ranks the others leave (--dp 0).
constexpr GroupKind kFills = GroupKind::kDp;

// Over every axis outside a set (the one that fills): their product, "--tp 2 x --pp 1" and "--tp and --pp".
struct OtherAxes {
  int product = 1;
  std::string sizes, flags;
};
OtherAxes otherAxes(const LayoutOptions& o, AxisSet set) {
  OtherAxes out;
  for (const MeshAxisSpec& a : kMeshAxes) {
    if (set.contains(a.kind)) continue;
    out.product *= o.*a.size;
    out.sizes += fmt::format("{}--{} {}", out.sizes.empty() ? "" : " x ", a.name, o.*a.size);
    out.flags += fmt::format("{}--{}", out.flags.empty() ? "" : " and ", a.name);
  }
  return out;
}

}  // namespace

const MeshAxisSpec& meshAxis(GroupKind kind) {
  for (const MeshAxisSpec& a : kMeshAxes)
    if (a.kind == kind) return a;
  throw Error("internal: a group kind without a mesh axis");
}

std::string_view groupKindName(GroupKind kind) { return meshAxis(kind).name; }

std::string axisSetName(AxisSet set) {
  std::string out;
  for (const MeshAxisSpec& a : kMeshAxes)
    if (set.contains(a.kind)) out += (out.empty() ? "" : "-") + std::string(a.name);
  return out;
}

int groupSize(const LayoutOptions& resolved, AxisSet set) {
  int n = 1;
  for (const MeshAxisSpec& a : kMeshAxes)
    if (set.contains(a.kind)) n *= resolved.*a.size;
  return n;
}

nlohmann::json recordedGroupSize(const nlohmann::json& layout, AxisSet set) {
  std::int64_t n = 1;
  for (const MeshAxisSpec& a : kMeshAxes) {
    if (!set.contains(a.kind) || !layout.is_object() || !layout.contains(std::string(a.name))) continue;
    const nlohmann::json& size = layout.at(std::string(a.name));
    if (!size.is_number_integer() || size.get<std::int64_t>() < 1) return nullptr;
    n *= size.get<std::int64_t>();
  }
  return n;
}

int LayoutOptions::replicas() const { return groupSize(*this, kReplicaAxes); }

int LayoutOptions::dataShards() const { return groupSize(*this, kDataAxes); }

nlohmann::json LayoutOptions::toJson() const {
  const bool async = sync == SyncKind::kAsyncParameterServer;
  nlohmann::json j = {{"zero", zero},
                      {"sync", nameOf(sync)},
                      {"ps_shards", sync == SyncKind::kParameterServer || (async && psServers == 0) ? nlohmann::json(psShards)
                                                                                                    : nlohmann::json()},
                      {"ps_servers", async ? nlohmann::json(psServers) : nlohmann::json()},
                      {"staleness", async ? nlohmann::json(staleness) : nlohmann::json()},
                      {"average_every", sync == SyncKind::kAverage ? nlohmann::json(averageEvery) : nlohmann::json()},
                      {"average_optimizer", sync == SyncKind::kAverage ? nlohmann::json(averageOptimizer) : nlohmann::json()},
                      {"bucket_mb", bucketMb},
                      {"overlap", overlap},
                      {"sync_bn", nameOf(syncBn)},
                      {"schedule", pp > 1 ? nlohmann::json(nameOf(schedule)) : nlohmann::json()},
                      {"pp_split", ppSplit},
                      {"name", name()}};
  for (const MeshAxisSpec& a : kMeshAxes) j[std::string(a.name)] = this->*a.size;
  return j;
}

std::string LayoutOptions::name() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  for (const MeshAxisSpec& a : kMeshAxes)
    if (this->*a.size > 1) add(fmt::format("{}={}", a.name, this->*a.size));
  if (zero > 0) add(fmt::format("zero={}", zero));
  if (sync == SyncKind::kParameterServer) add(fmt::format("ps({})", psShards));
  if (sync == SyncKind::kAsyncParameterServer)
    add(psServers > 0 ? fmt::format("ps-async(S={}, {} server{})", staleness, psServers, psServers > 1 ? "s" : "")
                      : fmt::format("ps-async(S={}, {} shard{})", staleness, psShards, psShards > 1 ? "s" : ""));
  if (sync == SyncKind::kAverage) add(fmt::format("average({}{})", averageEvery, averageOptimizer ? "+optimizer" : ""));
  if (pp > 1) add(std::string(nameOf(schedule)));
  if (replicas() > 1 && !overlap) add("no-overlap");
  return s.empty() ? "single" : s;
}

LayoutOptions resolveLayout(LayoutOptions o, int worldSize) {
  for (const MeshAxisSpec& a : kMeshAxes)
    if (a.kind != kFills && o.*a.size < 1) throw UsageError(fmt::format("--{} {}: must be at least 1", a.name, o.*a.size));
  const OtherAxes others = otherAxes(o, kFills);
  int& fills = o.*meshAxis(kFills).size;
  const std::string_view fillsName = meshAxis(kFills).name;
  if (fills < 0)
    throw UsageError(fmt::format("--{} {}: must be at least 1 (or 0: the ranks left by {})", fillsName, fills, others.flags));
  if (fills == 0) {
    if (worldSize % others.product)
      throw UsageError(fmt::format("{} does not divide the {} process(es) of this run", others.sizes, worldSize));
    fills = worldSize / others.product;
  }
  if (fills * others.product != worldSize)
    throw UsageError(fmt::format("--{} {} x {} = {} processes, but this run has {}{}", fillsName, fills, others.sizes,
                                 fills * others.product, worldSize, worldSize == 1 ? " (launch with mpirun -np N)" : ""));
  const bool async = o.sync == SyncKind::kAsyncParameterServer;
  const bool ps = o.sync == SyncKind::kParameterServer || (async && o.psServers == 0);
  if (!o.ppSplit.empty() && static_cast<int>(o.ppSplit.size()) != o.pp)
    throw UsageError(fmt::format("--pp-split gives {} stage(s), but --pp is {}", o.ppSplit.size(), o.pp));
  for (int n : o.ppSplit)
    if (n < 1) throw UsageError(fmt::format("--pp-split: a stage of {} layers (each needs at least 1)", n));
  if (o.zero < 0 || o.zero > 3) throw UsageError(fmt::format("--zero {}: expected 0, 1, 2 or 3", o.zero));
  if ((ps || async) && o.zero > 0)
    throw UsageError(
        fmt::format("--sync {} shards the optimizer on its servers already; it does not combine with --zero", nameOf(o.sync)));
  if (!async && (o.staleness != 0 || o.psServers != 0))
    throw UsageError("--staleness and --ps-servers are --sync ps-async's: give --sync ps-async");
  // A ps-async worker trains the whole model on data of its own: every other axis has one rank.
  if (const OtherAxes whole = otherAxes(o, kReplicaAxes & kDataAxes); async && whole.product > 1)
    throw UsageError(fmt::format("--sync ps-async trains data parallel only: {} must be 1", whole.flags));
  if (async && (o.staleness < 0 || o.staleness > 1000))
    throw UsageError(fmt::format("--staleness {}: must be between 0 (synchronous) and 1000", o.staleness));
  if (async && (o.psServers < 0 || o.psServers >= o.dataShards()))
    throw UsageError(fmt::format("--ps-servers {}: must leave at least one of the {} rank(s) to train (0: the workers serve)",
                                 o.psServers, o.dataShards()));
  if (ps && (o.psShards < 1 || o.psShards > o.replicas()))
    throw UsageError(fmt::format("--ps-shards {}: must be between 1 and the {} data-parallel rank(s) that serve them", o.psShards,
                                 o.replicas()));
  if (!(o.bucketMb > 0)) throw UsageError(fmt::format("--bucket-mb {}: must be positive", o.bucketMb));
  const bool average = o.sync == SyncKind::kAverage;
  if (o.averageEvery < 1) throw UsageError(fmt::format("--average-every {}: must be at least 1", o.averageEvery));
  if (!average && (o.averageEvery != 1 || o.averageOptimizer))
    throw UsageError("--average-every and --average-optimizer are --sync average's: give --sync average");
  if (o.prefetch != LayoutOptions{}.prefetch && o.zero < 3)
    throw UsageError("--prefetch is --zero 3's (it gathers the next layers' parameters ahead): give --zero 3");
  if (average && o.zero > 0)
    throw UsageError("--sync average: every rank keeps and steps the whole model; it does not combine with --zero");
  // Expert parallelism's experts are summed over their own replicas (kExpertReplicaAxes), the dense weights over all:
  // the all-reduce and ZeRO layouts do both; the servers' and averaging's keep one group for every parameter.
  if (const int experts = groupSize(o, kExpertAxes); experts > 1 && o.sync != SyncKind::kAllReduce)
    throw UsageError(
        fmt::format("--ep {}: expert parallelism trains with --sync allreduce (not yet --sync {})", experts, nameOf(o.sync)));
  return o;
}

}  // namespace ts::wl

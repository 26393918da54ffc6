#include "workloads/parallel/step_plan.h"

#include <algorithm>

#include "base/error.h"

namespace ts::wl {

PlanGroup planGroupOf(const Mesh& mesh, AxisSet set) {
  const ProcessGroupId id = mesh.groupId(set);
  PlanGroup g{axisSetName(id.axes), mesh.size(id.axes), mesh.groupRanks(set)};
  std::sort(g.members.begin(), g.members.end());
  return g;
}

void StepPlan::compute(ComputePhase phase, std::size_t layer, int micro, double flops) {
  events_.push_back({{"compute", nameOf(phase)}, {"layer", layer}, {"micro_batch", micro}, {"flops", flops}});
}

void StepPlan::optimizer(std::uint64_t elements) { events_.push_back({{"compute", "optimizer"}, {"elements", elements}}); }

int StepPlan::add(nlohmann::json issue, const PlanGroup& g) {
  const int id = static_cast<int>(ops_.size());
  issue["issue"] = id;
  issue["group"] = g.name;
  issue["group_size"] = g.size;
  events_.push_back(std::move(issue));
  ops_.push_back({g.members, false});
  return id;
}

int StepPlan::issue(const Collective& c, std::size_t count, std::size_t elementBytes, const PlanGroup& g,
                    CallPlacement placement) {
  const std::size_t bytes = c.layoutOfCount(count, elementBytes, g.size).bytes;
  return add({{"op", c.name()}, {"members", g.members}, {"bytes", bytes}, {"in_place", placement == CallPlacement::kInPlace}}, g);
}

void StepPlan::sum(std::size_t values, const PlanGroup& g) {
  wait(issue(collectives::all_reduce(), values, sizeof(double), g, CallPlacement::kInPlace));
}

int StepPlan::transfer(bool send, std::size_t count, const PlanGroup& g, int self, int peer) {
  const std::vector<int> pair{std::min(self, peer), std::max(self, peer)};
  return add({{"op", send ? "send" : "recv"}, {"members", pair}, {"bytes", count * sizeof(float)}, {"peer", peer}}, g);
}

void StepPlan::wait(int id) {
  auto& op = ops_.at(static_cast<std::size_t>(id));
  if (op.second) return;
  op.second = true;
  events_.push_back({{"wait", id}});
}

void StepPlan::waitAll(const PlanGroup& g) {
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].first == g.members) wait(static_cast<int>(i));
}

}  // namespace ts::wl

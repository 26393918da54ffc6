#pragma once
// One rank's training step written down instead of run (train --plan, issue #41): its compute per layer, phase
// and micro-batch, its optimizer, and every timed communication op its components issue and wait for, in program
// order (the "schedule" of a train_plan record; docs/architecture.md, "Prediction"). Where the steps differ (model
// averaging every K steps) it is the window of steps after which they repeat. Each component appends its
// ops from a plan beside its runtime code, with the same data structures (Buckets, the pipeline's plan), so the
// schedule is the trainer's and not a second description of it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "comm/collectives/collective.h"
#include "workloads/parallel/mesh.h"

namespace ts::wl {

enum class ComputePhase { kForward, kBackward, kRecompute };

// Whether the trainer's call of a collective is in place (MPI_IN_PLACE: the send buffer is the receive buffer, or the
// rank's own part of it) or not: on MPI the two forms cost differently (an in-place all_gather skips the copy of the
// rank's own chunk; an in-place all_reduce or reduce_scatter costs up to 1.5x more: docs/prediction.md), so a plan's op
// says which its call site makes, and the prediction costs it from that form's series.
enum class CallPlacement { kOutOfPlace, kInPlace };

// A group of the mesh as the train record's collectives rows name it, with its members' global ranks (ascending).
struct PlanGroup {
  std::string name;
  int size = 1;
  std::vector<int> members;
};
PlanGroup planGroupOf(const Mesh& mesh, AxisSet set);

class StepPlan {
 public:
  // A step begins: the schedule is a window of steps() of them (a layout whose steps differ plans until they repeat).
  void beginStep() { ++steps_; }
  int steps() const { return steps_; }
  void compute(ComputePhase phase, std::size_t layer, int micro, double flops);
  void optimizer(std::uint64_t elements);
  // A collective of `count` elements of `elementBytes` on g (bytes as CommTracker::start counts them), called in
  // `placement` as the runtime code beside the plan calls it; its id.
  int issue(const Collective& c, std::size_t count, std::size_t elementBytes, const PlanGroup& g, CallPlacement placement);
  // CommTracker::sum's: a blocking all-reduce of `values` float64 numbers, in place.
  void sum(std::size_t values, const PlanGroup& g);
  // One side of a transfer of `count` floats between global ranks self and peer (g: the group it is tracked in).
  int transfer(bool send, std::size_t count, const PlanGroup& g, int self, int peer);
  // Blocks on op id: written once, where the first wait for it is (later ones return at once).
  void wait(int id);
  void waitAll(const PlanGroup& g);  // every op issued on g not yet waited for, in issue order
  std::size_t issues() const { return ops_.size(); }
  const nlohmann::json& events() const { return events_; }

 private:
  int add(nlohmann::json issue, const PlanGroup& g);
  int steps_ = 0;
  nlohmann::json events_ = nlohmann::json::array();
  std::vector<std::pair<std::vector<int>, bool>> ops_;  // per id: its tracker's group (members), waited
};

// The plan's StepContext: what the components do around each layer of the rank's part, by the model's layer
// index, and when a layer's gradients are final (kLeading: the parameters outside the layers, the embeddings).
struct PlanContext {
  static constexpr std::size_t kLeading = SIZE_MAX;
  std::function<void(std::size_t)> beforeForward, afterForward, beforeBackward, afterBackward, gradsReady;
};

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::ComputePhase> {
  static constexpr std::pair<std::string_view, wl::ComputePhase> kNames[] = {{"forward", wl::ComputePhase::kForward},
                                                                             {"backward", wl::ComputePhase::kBackward},
                                                                             {"recompute", wl::ComputePhase::kRecompute}};
};
}  // namespace ts

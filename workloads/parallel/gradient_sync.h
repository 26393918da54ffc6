#pragma once
// How a data-parallel group turns each rank's gradients into one update. The trainer calls, per step:
//   for each micro-batch: beforeBackward(ctx, last) ... model backward ... afterBackward(last)
//   updateParams()  -> the optimizer, the gradient norm and the loss scaler work on these
//   globalSumOfSquares(local)  -> over every rank that holds a share of the update
//   afterUpdate()   -> every rank's parameters current again
// Layouts (one file each):
//   allreduce  (--zero 0)  buckets all-reduced as their gradients become ready; every rank updates all
//   zero 1/2   (--zero)    buckets reduce-scattered; each rank updates its shard; parameters all-gathered
//   ps         (--sync ps) buckets reduced to the server ranks; servers update; parameters broadcast
//   zero 3     (--zero 3)  parameters sharded too: each layer's gathered before it runs, released after
// Each rank's backward is scaled by 1/(micro-batches x group size), so its gradient is exactly its
// samples' share of the single-device gradient of the global batch (same magnitudes, so float16
// overflows where one device would), and the group's sum is that gradient.
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "workloads/layers/layer.h"
#include "workloads/layers/param_init.h"
#include "workloads/optim/optimizer.h"
#include "workloads/parallel/comm_tracker.h"
#include "workloads/parallel/mesh.h"
#include "workloads/parallel/step_plan.h"

namespace ts::wl {

class Model;

// The part of the model a rank trains: all of it, or its pipeline stage's layers (and the embeddings
// on the first stage).
struct ModelPart {
  std::vector<Param*> params;  // leading, then the layers' in order
  std::vector<Layer*> layers;
  std::vector<Param*> leading;  // used outside the layers (embeddings)
  Arena* arena = nullptr;       // the model's: buckets and shards live there
};
ModelPart wholeModel(Model& model);
// The parameters' elements, all together.
std::uint64_t elementsOf(const std::vector<Param*>& params);

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void beforeForward(StepContext&) {}
  // After forwards with no backward (an evaluation): what beforeForward holds for a backward is let go.
  virtual void afterForwardOnly() {}
  virtual void beforeBackward(StepContext& ctx, bool last) = 0;
  virtual void afterBackward(bool last) = 0;
  virtual std::vector<Param*> updateParams() = 0;
  virtual double globalSumOfSquares(double local) = 0;
  // The same for the experts' squares under expert parallelism (their own group's shards; the trainer then adds the
  // expert-parallel ranks', each holding others): the dense parameters' group elsewhere, where experts are like them.
  virtual double expertSumOfSquares(double local) { return globalSumOfSquares(local); }
  virtual void afterUpdate() = 0;
  // The parameters whose values this rank keeps between steps: the model's, or ZeRO-3's shards (its
  // layers are gathered only to run). A resume fills these; mixed precision rounds them for the compute.
  virtual std::vector<Param*> keptParams() { return modelParams_; }
  // Calls visit with every parameter's current value in the model, each valid during its call only
  // (ZeRO-3 gathers one layer at a time, so reading the weights never holds the whole model). Collective.
  virtual void visitParameters(const std::function<void(Param&)>& visit) {
    for (Param* p : modelParams_) visit(*p);
  }
  // Which of this rank's tensors may differ from data-parallel rank 0's copies of them now (model averaging
  // between averagings): a checkpoint then keeps every rank's own (training_state.h). Elsewhere the replicas
  // are the same after every update.
  struct Divergence {
    bool params = false, optimizer = false, buffers = false;
  };
  virtual Divergence divergence() const { return {}; }
  // Bytes of gradients and optimizer-state parameters this rank keeps (for the record).
  std::size_t ownedParameterElements();
  virtual StepComm takeStepComm() { return tracker_ ? tracker_->take() : StepComm{}; }
  void setGroup(ProcessGroupId group) {
    if (tracker_) tracker_->setGroup(group);
  }
  // The group's mean of a per-rank figure (the loss); timed: counted as the step's communication.
  double groupMean(double v, bool timed);
  // Sums v over the group in place (one collective, counted as the step's communication); a group of one
  // leaves it as it is.
  void sumOverGroup(std::span<double> v);
  // The same over the copies of the experts (expert parallelism's second group; elsewhere the group's own).
  virtual void sumOverExpertGroup(std::span<double> v) { sumOverGroup(v); }

 protected:
  explicit GradientSync(std::vector<Param*> modelParams) : modelParams_(std::move(modelParams)) {}
  GradientSync(std::vector<Param*> modelParams, Communicator& group, double timeoutS);
  // The sum of v over the group; timed: counted as the step's communication (exposed).
  double groupSum(double v, bool timed);
  // The sharded layouts' shards, as the optimizer takes them.
  static std::vector<Param*> pointersTo(std::vector<Param>& pieces);
  std::vector<Param*> modelParams_;
  Communicator* group_ = nullptr;
  std::unique_ptr<CommTracker> tracker_;
};

// The sync of `mesh`'s data-parallel group for the part's parameters (a group of one: no communication).
std::unique_ptr<GradientSync> makeGradientSync(const Mesh& mesh, const ModelPart& part, double timeoutS);
// The layout's sync (averaging, ZeRO-3, ZeRO-1/2 or the servers, all-reduce) of `part` over `group`, whose mesh group
// is `id`: makeGradientSync's over the replicas, and each of expert parallelism's two groups' (expert_sync.h).
std::unique_ptr<GradientSync> syncOver(Communicator& group, ProcessGroupId id, const ModelPart& part, const LayoutOptions& l,
                                       double timeoutS);
// One rank's: the gradients are already the group's (the part's parameters hold their gradients).
std::unique_ptr<GradientSync> makeLocalSync(const ModelPart& part);

// A sync's plan (train --plan): the ops its GradientSync's hooks issue and wait for, appended to a StepPlan where
// they would be. Each layout's sits beside its class, built from the same layout (its Buckets, its groups), and
// makeSyncPlan picks it as makeGradientSync picks the class. The hooks take the layer's place in the part.
class SyncPlan {
 public:
  virtual ~SyncPlan() = default;
  virtual void beforeForward(PlanContext&) {}
  virtual void beforeBackward(PlanContext& ctx, bool last);
  virtual void afterBackward(bool) {}
  virtual void globalSumOfSquares() {}
  virtual void expertSumOfSquares() { globalSumOfSquares(); }
  virtual void afterUpdate() {}
  virtual std::uint64_t updateElements() const = 0;  // the optimizer's: updateParams()' elements
  // The steps after which its ops repeat (the schedule's window): one, or model averaging's --average-every.
  virtual int windowSteps() const { return 1; }
};
// `optimizer`: the kind the trainer steps (model averaging's --average-optimizer averages its state).
std::unique_ptr<SyncPlan> makeSyncPlan(const Mesh& mesh, const ModelPart& part, OptimizerKind optimizer, StepPlan& plan);
// syncOver's plan: the layout's over `group`, this rank being its `replica`-th member.
std::unique_ptr<SyncPlan> syncPlanOver(PlanGroup group, int replica, const ModelPart& part, const LayoutOptions& l,
                                       OptimizerKind optimizer, StepPlan& plan);
// makeLocalSync's: nothing to communicate.
std::unique_ptr<SyncPlan> makeLocalPlan(const ModelPart& part);
// What of the part's deferred parameters (param_init.h) the layout's sync takes materialised, drawing the rest
// itself: values and gradients (one data-parallel rank, --sync average), values (all-reduce: the gradients live
// in its buckets), or nothing (ZeRO-1/2 and the parameter servers draw the values into their flats, ZeRO-3 its
// chunks). Whatever the sync, a rank never holds more of the model than it keeps.
ParamParts paramPartsForSync(const Mesh& mesh);

}  // namespace ts::wl

#pragma once
// Pipeline parallelism: the model's layers cut into --pp contiguous stages, one per pipeline rank; a step's
// micro-batches flow through them, activations sent forward and their gradients back with point-to-point
// messages. Two schedules:
//   gpipe  every micro-batch's forward, then every backward;
//   1f1b   stage s runs min(p-s-1, m) forwards, then alternates one forward and one backward, then drains
//          the backwards: at most p-s micro-batches in flight, so less to keep.
// The theoretical idle fraction (the bubble) of both is (p-1)/(m+p-1); the measured one is each stage's
// time blocked on its transfers (a receive, and the send posted with it: pipelinePlan) over its step time.
//
// Layers keep the state of one micro-batch (their inputs and outputs for the backward), so a backward
// for a micro-batch that is not the one the stage last ran forward re-runs that forward first from the
// stage's saved input (activation recomputation, as GPipe does): the extra forward shows in the stage's
// compute time. The result is the same, so is the loss trajectory.
//
// Every rank first builds a probe of the whole model (deferred parameters, param_init.h; every activation in two
// scratch sets, BuiltLayers::none()), cuts it and measures the activations crossing the cuts with one forward
// (each layer's parameters held only while it runs), and lets it go (cutPipeline). Then it builds the model
// again with its own stage's activation buffers alone (the other layers scratch, BuiltLayers) and materialises
// its stage's parameters alone: it never holds another stage's parameters or activations, and trains only its
// stage's part; the first stage also embeds, the last computes the loss. A stage keeps the inputs of its micro-batches in flight
// only: 1F1B has at most p - s of them at stage s, GPipe all m.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "workloads/data/batch.h"
#include "workloads/parallel/comm_tracker.h"
#include "workloads/parallel/gradient_sync.h"
#include "workloads/parallel/layout_choices.h"
#include "workloads/parallel/step_plan.h"

namespace ts::wl {

struct StageRange {
  std::size_t from = 0, to = 0;  // layers [from, to)
};

// Cuts layers with these forward costs into `stages` contiguous ranges: by hand (`split`: layers per
// stage), or minimising the largest stage's cost. UsageError when it cannot (more stages than layers).
std::vector<StageRange> splitStages(const std::vector<double>& layerFlops, int stages, const std::vector<int>& split);

// Where a model is cut for this rank's stage (its coordinate on the mesh's pp axis), and the shapes of what
// crosses its ends, from one forward of `probe` on `sample` (probe: built deferred, its activations scratch).
struct PipelineCut {
  std::vector<StageRange> stages;
  int stage = 0;
  std::vector<std::int64_t> inShape, outShape;  // what this stage receives and sends (empty at the ends)
  const StageRange& range() const { return stages[static_cast<std::size_t>(stage)]; }
  bool last() const { return stage + 1 == static_cast<int>(stages.size()); }
};
PipelineCut cutPipeline(const Mesh& mesh, Model& probe, const data::Batch& sample);
// What stage `range` of `model` trains: its layers' parameters, and the embeddings on the first stage.
ModelPart stagePart(Model& model, const StageRange& range, bool first);

// A stage's buffers of what crosses its cuts, in `arena`: the inputs it keeps for recomputation (activations: one per
// micro-batch in flight) and the transfers' (comm buffers). `schedule` decides how many inputs are in flight.
struct PipelineBuffers {
  std::vector<Tensor> inputs;    // per micro-batch in flight (a ring): the received input, kept for recomputation
  std::vector<Tensor> outputs;   // per micro-batch: the sent output
  std::vector<Tensor> gradsOut;  // per micro-batch: the input gradient sent back
  Tensor gradIn;                 // the output gradient received
};
PipelineBuffers allocatePipelineBuffers(Arena& arena, const PipelineCut& cut, PipelineSchedule schedule, int micros);

struct PipeOp {
  bool forward;
  int micro;
  // A backward whose micro-batch's forward is not the last the stage ran (its layers hold another's state; none at the
  // step's start): it runs that forward again first. Set by pipelineSchedule, the one place the rule is written.
  bool reforward = false;
};
// The order stage `stage` of `stages` runs the forwards and backwards of `micros` micro-batches.
std::vector<PipeOp> pipelineSchedule(PipelineSchedule kind, int stage, int stages, int micros);

// A transfer between neighbouring stages as one of them sees it: an activation goes to the next stage, its
// gradient comes back to the previous one.
enum class PipeTransferKind { kSendActivation, kRecvActivation, kSendGradient, kRecvGradient };
struct PipeTransfer {
  PipeTransferKind kind;
  int micro;
  bool send() const { return kind == PipeTransferKind::kSendActivation || kind == PipeTransferKind::kSendGradient; }
  // The other stage: +1 (the next) or -1 (the previous), from this stage.
  int peerOffset() const { return kind == PipeTransferKind::kSendActivation || kind == PipeTransferKind::kRecvGradient ? 1 : -1; }
};
// One step of a stage: its compute (none in the first step), then the transfers it posts together once that
// is done and waits for before the next step's compute: the send of what the compute produced with the
// receive the next compute needs (Megatron's send_forward_recv_backward, send_backward_recv_forward). On
// NCCL a send of more than its buffering blocks until the receiver runs, and a stage's transfers run one
// after another on its stream: 1F1B's steady state, where two neighbours each send before they receive,
// deadlocks unless each send progresses beside the receive posted with it (one group). The last step posts
// the last send alone.
struct PipeStep {
  std::optional<PipeOp> compute;
  std::vector<PipeTransfer> post;
};
std::vector<PipeStep> pipelinePlan(PipelineSchedule kind, int stage, int stages, int micros);
// Of a step's backwards, those that re-run their micro-batch's forward first (PipeOp::reforward), as step() and
// planPipelineStep run them: the stage's recomputed forwards.
int reforwardsPerStep(PipelineSchedule kind, int stage, int stages, int micros);

// What Pipeline::step computes and transfers, written into `plan` (train --plan): pipelinePlan's order, each step's
// transfers (the cut's sizes, with the neighbouring stages' global ranks) posted and waited for as step() does.
// The callbacks append a micro-batch's compute with the sync's hooks: a forward, a backward (after a recomputed
// forward where the stage's layers hold another micro-batch's), and the sync after a backward.
struct PipelinePlanSteps {
  std::function<void(int micro)> forward;
  std::function<void(int micro, bool recompute, bool lastBackward)> backward;
  std::function<void(bool lastBackward)> afterBackward;
};
void planPipelineStep(const Mesh& mesh, const PipelineCut& cut, int micros, StepPlan& plan, const PipelinePlanSteps& run);

struct PipelineTimes {
  double forwardS = 0, backwardS = 0;          // compute (recomputation included)
  double forwardCommS = 0, backwardCommS = 0;  // of those, blocked in communication calls (StepResult's)
  double waitS = 0;                            // blocked on transfers: a receive, with the send posted beside it
  double syncS = 0;                            // the data-parallel sync after each backward
};

class Pipeline {
 public:
  // The stage `cut` names (this rank's coordinate on the mesh's pp axis) over that axis's group, for steps of
  // `micros` micro-batches. `model` comes deferred (ParamStorage::kDeferred) with the stage's activations
  // (BuiltLayers); whoever built it materialises part()'s parameters.
  Pipeline(const Mesh& mesh, Model& model, const PipelineCut& cut, double timeoutS, int micros);
  const StageRange& range() const { return range_; }
  const std::vector<StageRange>& stages() const { return stages_; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == stagesCount_ - 1; }
  ModelPart part() const;  // what this stage trains
  int reforwardsPerStep() const { return wl::reforwardsPerStep(schedule_, stage_, stagesCount_, micros_); }
  // One step: every micro-batch through this stage in the schedule's order. The backward of each scales
  // its loss by `scale`; the sync's hooks run around each forward and backward. Returns the sum of the
  // micro-batches' losses on the last stage (0 elsewhere).
  double step(const std::vector<data::Batch>& micros, float scale, GradientSync& sync, StepContext& ctx, PipelineTimes& times);
  // A forward-only pass of one micro-batch (evaluation): the input from the stage before, this stage's layers,
  // the output to the next, each transfer waited for. Adds the batch's mean loss into *loss and returns the
  // logits on the last stage; null elsewhere.
  const Tensor* forwardOnly(const data::Batch& batch, StepContext& ctx, double* loss);
  StepComm takeStepComm() { return tracker_.take(); }
  // The sum of v over the stages (the loss lives on the last; the gradient norm is every stage's);
  // timed: counted as the step's communication.
  double sumOverStages(double v, bool timed);

 private:
  const Tensor& forwardMicro(const data::Batch& batch, int micro, StepContext& ctx, double* loss);
  // One operation of step()'s plan on micro-batch `micro`, timed into times.
  void forwardOp(const data::Batch& batch, int micro, GradientSync& sync, StepContext& ctx, PipelineTimes& times,
                 double* lossSum);
  // A backward (after its forward again where op.reforward says the layers hold another micro-batch's state).
  void backwardOp(const data::Batch& batch, const PipeOp& op, bool lastBackward, float scale, GradientSync& sync,
                  StepContext& ctx, PipelineTimes& times);
  PointToPoint transferOf(const PipeTransfer& t);  // its buffer, size, peer and tag
  void allocateBuffers(const PipelineCut& cut, int micros);
  const Tensor& inputOf(int micro) const { return inputs_[static_cast<std::size_t>(micro) % inputs_.size()]; }
  Model& model_;
  int stage_, stagesCount_;
  PipelineSchedule schedule_;
  std::vector<StageRange> stages_;
  StageRange range_;
  Communicator* comm_;
  CommTracker tracker_;
  std::size_t inCount_ = 0, outCount_ = 0;  // elements received from the stage before, sent to the next
  std::vector<Tensor> inputs_;              // PipelineBuffers' (allocatePipelineBuffers)
  std::vector<Tensor> outputs_;
  std::vector<Tensor> gradsOut_;
  Tensor gradIn_;
  int micros_ = 0;  // the micro-batches per step the buffers are for
};

}  // namespace ts::wl

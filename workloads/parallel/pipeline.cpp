#include "workloads/parallel/pipeline.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "base/error.h"
#include "base/steady_seconds.h"
#include "kernels/trace.h"
#include "workloads/models/model.h"
#include "workloads/parallel/comm_tracker.h"

namespace ts::wl {
namespace {

int tagOf(int micro, bool gradient) { return 2 * micro + (gradient ? 1 : 0); }

// The deferred parameters of one layer (or the embeddings) given memory for the probe's forward alone, and given
// back after it: the probe holds one layer beside this stage's at a time. Zeros: only the shapes matter.
class ProbeParams {
 public:
  ProbeParams(const std::vector<Param*>& params, Arena& arena) : arena_(arena) {
    for (Param* p : params)
      if (!p->value.data) {
        p->value = arena.tensor(p->value.shape, MemoryKind::kParameters);
        taken_.push_back(p);
      }
  }
  ~ProbeParams() {
    for (Param* p : taken_) arena_.release(p->value);
  }
  ProbeParams(const ProbeParams&) = delete;
  ProbeParams& operator=(const ProbeParams&) = delete;

 private:
  Arena& arena_;
  std::vector<Param*> taken_;
};

std::vector<Param*> paramsOf(Layer& l) {
  std::vector<Param*> out;
  l.params(out);
  return out;
}

}  // namespace

std::vector<StageRange> splitStages(const std::vector<double>& flops, int stages, const std::vector<int>& split) {
  const std::size_t n = flops.size();
  if (stages > static_cast<int>(n))
    throw UsageError(fmt::format("--pp {}: the model has only {} layers to cut into stages", stages, n));
  std::vector<StageRange> out;
  if (!split.empty()) {
    const long sum = std::accumulate(split.begin(), split.end(), 0L);
    if (sum != static_cast<long>(n))
      throw UsageError(fmt::format("--pp-split adds up to {} layers, but the model has {}", sum, n));
    std::size_t at = 0;
    for (int k : split) {
      out.push_back({at, at + static_cast<std::size_t>(k)});
      at += static_cast<std::size_t>(k);
    }
    return out;
  }
  // Contiguous partition minimising the largest stage's cost (dynamic programming over prefixes). A layer
  // without matmul FLOPs (an activation, a norm) still costs a little, so no stage is left with none.
  const double total = std::accumulate(flops.begin(), flops.end(), 0.0);
  std::vector<double> prefix(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + flops[i] + 1e-3 * std::max(total, 1.0) / static_cast<double>(n);
  const double inf = std::numeric_limits<double>::infinity();
  const auto S = static_cast<std::size_t>(stages);
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> cut(S + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t s = 1; s <= S; ++s)
    for (std::size_t j = s; j <= n; ++j)
      for (std::size_t i = s - 1; i < j; ++i) {
        const double c = std::max(best[s - 1][i], prefix[j] - prefix[i]);
        if (c < best[s][j]) {
          best[s][j] = c;
          cut[s][j] = i;
        }
      }
  out.resize(S);
  std::size_t j = n;
  for (std::size_t s = S; s >= 1; --s) {
    out[s - 1] = {cut[s][j], j};
    j = cut[s][j];
  }
  return out;
}

namespace {

std::vector<PipeOp> scheduleOrder(PipelineSchedule kind, int stage, int stages, int micros) {
  std::vector<PipeOp> ops;
  if (kind == PipelineSchedule::kGPipe) {
    for (int i = 0; i < micros; ++i) ops.push_back({true, i});
    for (int i = micros - 1; i >= 0; --i) ops.push_back({false, i});  // the last forward's state is still held
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, micros);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({true, f});
  while (f < micros) {
    ops.push_back({true, f++});
    ops.push_back({false, b++});
  }
  while (b < micros) ops.push_back({false, b++});
  return ops;
}

}  // namespace

std::vector<PipeOp> pipelineSchedule(PipelineSchedule kind, int stage, int stages, int micros) {
  std::vector<PipeOp> ops = scheduleOrder(kind, stage, stages, micros);
  int held = -1;  // the micro-batch whose forward state the stage's layers hold
  for (PipeOp& op : ops) {
    op.reforward = !op.forward && held != op.micro;
    held = op.micro;
  }
  return ops;
}

std::vector<PipeStep> pipelinePlan(PipelineSchedule kind, int stage, int stages, int micros) {
  const bool first = stage == 0, last = stage == stages - 1;
  // What an op needs before it runs, and what it sends once it has (none at the pipeline's ends).
  auto receiveFor = [&](const PipeOp& op, std::vector<PipeTransfer>& into) {
    if (op.forward && !first) into.push_back({PipeTransferKind::kRecvActivation, op.micro});
    if (!op.forward && !last) into.push_back({PipeTransferKind::kRecvGradient, op.micro});
  };
  auto sendOf = [&](const PipeOp& op, std::vector<PipeTransfer>& into) {
    if (op.forward && !last) into.push_back({PipeTransferKind::kSendActivation, op.micro});
    if (!op.forward && !first) into.push_back({PipeTransferKind::kSendGradient, op.micro});
  };
  const std::vector<PipeOp> ops = pipelineSchedule(kind, stage, stages, micros);
  std::vector<PipeStep> plan(1);
  if (!ops.empty()) receiveFor(ops.front(), plan.back().post);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    PipeStep& step = plan.emplace_back();
    step.compute = ops[k];
    sendOf(ops[k], step.post);
    if (k + 1 < ops.size()) receiveFor(ops[k + 1], step.post);
  }
  return plan;
}

PipelineCut cutPipeline(const Mesh& mesh, Model& probe, const data::Batch& sample) {
  PipelineCut cut;
  cut.stage = mesh.coordinate(GroupKind::kPp);
  std::vector<double> flops;
  for (Layer* l : probe.layers()) flops.push_back(l->forwardFlops());
  cut.stages = splitStages(flops, mesh.size(GroupKind::kPp), mesh.layout().ppSplit);
  // The sizes of the activations crossing the cuts, from one forward of the whole probe, each layer's
  // parameters held only while it runs (the probe is deferred: ProbeParams). What it writes (its scratch
  // buffers, batch norm's statistics) goes with it.
  const StageRange& range = cut.range();
  Arena& arena = probe.arena();
  StepContext ctx;
  const Tensor* y = nullptr;
  {
    const ProbeParams embeddings(probe.leadingParams(), arena);
    y = &probe.embed(sample, ctx);
  }
  const std::vector<Layer*> layers = probe.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i == range.from && cut.stage > 0) cut.inShape = y->shape;
    const ProbeParams held(paramsOf(*layers[i]), arena);
    y = &probe.forwardLayers(*y, ctx, i, i + 1);
    if (i + 1 == range.to && !cut.last()) cut.outShape = y->shape;
  }
  return cut;
}

Pipeline::Pipeline(const Mesh& mesh, Model& model, const PipelineCut& cut, double timeoutS, int micros)
    : model_(model),
      stage_(cut.stage),
      stagesCount_(mesh.size(GroupKind::kPp)),
      schedule_(mesh.layout().schedule),
      stages_(cut.stages),
      range_(cut.range()),
      comm_(mesh.group(GroupKind::kPp)),
      tracker_(*comm_, timeoutS, mesh.groupId(GroupKind::kPp)) {
  allocateBuffers(cut, micros);
}

PipelineBuffers allocatePipelineBuffers(Arena& arena, const PipelineCut& cut, PipelineSchedule schedule, int M) {
  const std::vector<std::int64_t>& inShape = cut.inShape;
  const std::vector<std::int64_t>& outShape = cut.outShape;
  const int stages = static_cast<int>(cut.stages.size());
  const bool first = cut.stage == 0;
  // 1F1B: stage s has at most p - s micro-batches between forward and backward, and they start and end
  // in order, so micro-batch i's input can live in slot i mod (p - s).
  const int inFlight = schedule == PipelineSchedule::k1F1B ? std::min(M, stages - cut.stage) : M;
  PipelineBuffers b;
  if (!first)
    for (int i = 0; i < inFlight; ++i) b.inputs.push_back(arena.tensor(inShape, MemoryKind::kActivations));
  for (int i = 0; i < M; ++i) {
    if (!cut.last()) b.outputs.push_back(arena.tensor(outShape, MemoryKind::kCommBuffers));
    if (!first) b.gradsOut.push_back(arena.tensor(inShape, MemoryKind::kCommBuffers));
  }
  if (!cut.last()) b.gradIn = arena.tensor(outShape, MemoryKind::kCommBuffers);
  return b;
}

void Pipeline::allocateBuffers(const PipelineCut& cut, int M) {
  PipelineBuffers b = allocatePipelineBuffers(model_.arena(), cut, schedule_, M);
  inputs_ = std::move(b.inputs);
  outputs_ = std::move(b.outputs);
  gradsOut_ = std::move(b.gradsOut);
  gradIn_ = std::move(b.gradIn);
  inCount_ = first() ? 0 : inputs_[0].numel();
  outCount_ = last() ? 0 : outputs_[0].numel();
  micros_ = M;
}

ModelPart stagePart(Model& model, const StageRange& range, bool first) {
  ModelPart p;
  p.arena = &model.arena();
  const std::vector<Layer*> all = model.layers();
  if (first) p.leading = model.leadingParams();
  p.params = p.leading;
  for (std::size_t i = range.from; i < range.to; ++i) {
    p.layers.push_back(all[i]);
    all[i]->params(p.params);
  }
  return p;
}

ModelPart Pipeline::part() const { return stagePart(model_, range_, first()); }

const Tensor& Pipeline::forwardMicro(const data::Batch& batch, int micro, StepContext& ctx, double* loss) {
  ctx.step = batch.step;
  ctx.firstSample = batch.firstPosition;
  const Tensor& x = first() ? model_.embed(batch, ctx) : inputOf(micro);
  const Tensor& y = model_.forwardLayers(x, ctx, range_.from, range_.to);
  if (last()) {
    const double l = model_.lossForward(y, batch);
    if (loss) *loss += l;
  }
  return y;
}

const Tensor* Pipeline::forwardOnly(const data::Batch& batch, StepContext& ctx, double* loss) {
  if (!first()) tracker_.wait(tracker_.startRecv(inputOf(0).data, inCount_, stage_ - 1, tagOf(0, false)));
  const Tensor& y = forwardMicro(batch, 0, ctx, loss);
  if (last()) return &model_.logits();
  copy(outputs_[0], Tensor{y.data, outputs_[0].shape, y.device});
  model_.arena().device().synchronize();
  tracker_.wait(tracker_.startSend(outputs_[0].data, outCount_, stage_ + 1, tagOf(0, false)));
  return nullptr;
}

PointToPoint Pipeline::transferOf(const PipeTransfer& t) {
  const auto i = static_cast<std::size_t>(t.micro);
  const int peer = stage_ + t.peerOffset();
  switch (t.kind) {
    case PipeTransferKind::kSendActivation:
      return {PointToPoint::Kind::kSend, outputs_[i].data, outCount_, DType::kFloat32, peer, tagOf(t.micro, false)};
    case PipeTransferKind::kRecvActivation:
      return {PointToPoint::Kind::kRecv, inputs_[i % inputs_.size()].data, inCount_, DType::kFloat32, peer,
              tagOf(t.micro, false)};
    case PipeTransferKind::kSendGradient:
      return {PointToPoint::Kind::kSend, gradsOut_[i].data, inCount_, DType::kFloat32, peer, tagOf(t.micro, true)};
    case PipeTransferKind::kRecvGradient:
      return {PointToPoint::Kind::kRecv, gradIn_.data, outCount_, DType::kFloat32, peer, tagOf(t.micro, true)};
  }
  throw Error("internal: a pipeline transfer of no kind");
}

void Pipeline::forwardOp(const data::Batch& batch, int micro, GradientSync& sync, StepContext& ctx, PipelineTimes& times,
                         double* lossSum) {
  const auto i = static_cast<std::size_t>(micro);
  trace::Span forward("forward", trace::Role::kCompute, micro);
  const double comm0 = blockedInCommunicationS();
  sync.beforeForward(ctx);
  const Tensor& y = forwardMicro(batch, micro, ctx, lossSum);
  if (!last()) copy(outputs_[i], Tensor{y.data, outputs_[i].shape, y.device});
  model_.arena().device().synchronize();
  times.forwardS += forward.close();
  times.forwardCommS += blockedInCommunicationS() - comm0;
}

void Pipeline::backwardOp(const data::Batch& batch, const PipeOp& op, bool lastBackward, float scale, GradientSync& sync,
                          StepContext& ctx, PipelineTimes& times) {
  const int micro = op.micro;
  const auto i = static_cast<std::size_t>(micro);
  trace::Span backward("backward", trace::Role::kCompute, micro);
  const double comm0 = blockedInCommunicationS();
  if (op.reforward) {
    // Recomputation: the loss was counted, and batch norm's running statistics updated, the first time
    // (updating them again counted the recomputed micro-batches twice: found by evaluating under --pp).
    sync.beforeForward(ctx);
    const bool training = ctx.training;
    ctx.training = false;
    forwardMicro(batch, micro, ctx, nullptr);
    ctx.training = training;
  }
  sync.beforeBackward(ctx, lastBackward);
  ctx.lossScale = scale;  // every stage's: its MoE layers' auxiliary losses
  const Tensor& dy = last() ? model_.lossBackward(scale) : gradIn_;
  const Tensor& dx = model_.backwardLayers(dy, ctx, range_.from, range_.to);
  if (first())
    model_.embedBackward(dx, ctx);
  else
    copy(gradsOut_[i], Tensor{dx.data, gradsOut_[i].shape, dx.device});
  model_.arena().device().synchronize();
  times.backwardS += backward.close();
  times.backwardCommS += blockedInCommunicationS() - comm0;
}

double Pipeline::step(const std::vector<data::Batch>& micros, float scale, GradientSync& sync, StepContext& ctx,
                      PipelineTimes& times) {
  const int M = static_cast<int>(micros.size());
  if (M != micros_) throw Error(fmt::format("internal: a pipeline built for {} micro-batches given {}", micros_, M));

  double lossSum = 0;
  int backwardsLeft = M;
  std::vector<int> posted;          // the transfers the previous step posted together
  std::vector<PointToPoint> group;  // this step's
  auto post = [&] { posted = tracker_.startTogether(group); };
  auto waitPosted = [&] {
    // Receives first: they complete with the group, so the trace's `wait recv` spans hold the time blocked,
    // which `analyze` counts as the bubble; the sends are done by then.
    const double t0 = steadySeconds();
    for (bool receives : {true, false})
      for (std::size_t k = 0; k < posted.size(); ++k)
        if ((group[k].kind == PointToPoint::Kind::kRecv) == receives) tracker_.wait(posted[k]);
    times.waitS += steadySeconds() - t0;
  };
  for (const PipeStep& st : pipelinePlan(schedule_, stage_, stagesCount_, M)) {
    // The previous step's group first: this compute's input is in it. Every buffer its sends read or its
    // receives write is free again once it completes (a micro-batch's own output, the one gradient slot,
    // an input slot the backward before let go).
    waitPosted();
    group.clear();
    for (const PipeTransfer& t : st.post) group.push_back(transferOf(t));
    if (!st.compute) {
      post();
      continue;
    }
    const PipeOp& op = *st.compute;
    const auto i = static_cast<std::size_t>(op.micro);
    if (op.forward) {
      forwardOp(micros[i], op.micro, sync, ctx, times, &lossSum);
      post();
      tracker_.poll();
      continue;
    }
    const bool lastBackward = --backwardsLeft == 0;
    backwardOp(micros[i], op, lastBackward, scale, sync, ctx, times);
    // Posted before the data-parallel sync, which may block: the neighbours' transfers go on meanwhile.
    post();
    trace::Span syncSpan("sync", trace::Role::kPhase);
    sync.afterBackward(lastBackward);
    times.syncS += syncSpan.close();
  }
  waitPosted();  // the last send
  return lossSum;
}

int reforwardsPerStep(PipelineSchedule kind, int stage, int stages, int micros) {
  const std::vector<PipeOp> ops = pipelineSchedule(kind, stage, stages, micros);
  return static_cast<int>(std::count_if(ops.begin(), ops.end(), [](const PipeOp& op) { return op.reforward; }));
}

void planPipelineStep(const Mesh& mesh, const PipelineCut& cut, int micros, StepPlan& plan, const PipelinePlanSteps& run) {
  const PlanGroup pp = planGroupOf(mesh, GroupKind::kPp);
  const std::vector<int> stages = mesh.groupRanks(GroupKind::kPp);  // global ranks in stage order
  auto elements = [](const std::vector<std::int64_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, [](std::size_t a, std::int64_t d) { return a * d; });
  };
  const std::size_t in = cut.stage == 0 ? 0 : elements(cut.inShape), out = cut.last() ? 0 : elements(cut.outShape);
  std::vector<std::pair<int, bool>> posted;  // (id, receive)
  auto post = [&](const std::vector<PipeTransfer>& transfers) {
    posted.clear();
    for (const PipeTransfer& t : transfers) {
      const bool activation = t.kind == PipeTransferKind::kSendActivation || t.kind == PipeTransferKind::kRecvActivation;
      const std::size_t count = activation == t.send() ? out : in;  // what the stage sends on / receives back, or its input
      const int peer = stages[static_cast<std::size_t>(cut.stage + t.peerOffset())];
      posted.emplace_back(plan.transfer(t.send(), count, pp, mesh.rank(), peer), !t.send());
    }
  };
  auto waitPosted = [&] {  // the receives first, as step()
    for (bool receives : {true, false})
      for (const auto& [id, receive] : posted)
        if (receive == receives) plan.wait(id);
  };
  int backwardsLeft = micros;
  for (const PipeStep& st : pipelinePlan(mesh.layout().schedule, cut.stage, static_cast<int>(cut.stages.size()), micros)) {
    waitPosted();
    if (st.compute && st.compute->forward) run.forward(st.compute->micro);
    const bool lastBackward = st.compute && !st.compute->forward && --backwardsLeft == 0;
    if (st.compute && !st.compute->forward) run.backward(st.compute->micro, st.compute->reforward, lastBackward);
    post(st.post);
    if (st.compute && !st.compute->forward) run.afterBackward(lastBackward);
  }
  waitPosted();
}

double Pipeline::sumOverStages(double v, bool timed) { return tracker_.sum(v, timed); }

}  // namespace ts::wl

#include "workloads/trainer/ps_async_steps.h"

#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/device_ops.h"
#include "workloads/trainer.h"

namespace ts::wl {

void installPsAsyncUpdate(AsyncPsSync& ps, Optimizer& optimizer, const Schedule& schedule, Device& device) {
  ps.setUpdate([&optimizer, &schedule, &device](std::int64_t clock) {
    optimizer.step(schedule.at(clock), static_cast<int>(clock + 1));
    device.synchronize();
  });
}

// A dedicated ps-async server's step: the update of this clock, once every worker's gradient is in, sent to
// the workers; no batch of its own. After the last, every worker holds the final values.
StepResult Trainer::serveStep(StepResult& r, trace::Span& stepSpan) {
  AsyncPsSync& ps = *parts_.asyncPs;
  trace::Span sync("sync", trace::Role::kPhase);
  ps.serve(r.step);
  r.lr = options_.schedule.at(r.step);
  ++nextStep_;
  if (done()) ps.finish();
  r.syncS = sync.close();
  r.comm = ps.takeWaits();
  r.totalS = stepSpan.close();
  return r;
}

// A ps-async worker's step after its backward (its gradient sent): no group mean and no update here. Its
// loss and gradient norm are its own batch's (the norm of its gradient before the 1 / workers scaling).
StepResult Trainer::finishAsyncStep(StepResult& r, double loss, trace::Span& stepSpan) {
  AsyncPsSync& ps = *parts_.asyncPs;
  r.loss = loss / static_cast<double>(options_.microBatches);
  if (!std::isfinite(r.loss)) throw Error(fmt::format("step {}: the loss is {} (diverged; lower --lr)", r.step, r.loss));
  double sq = 0;
  for (Param* p : parts_.model->params()) sq += ops::sumOfSquares(*p->grad.device, p->grad.data, p->grad.numel());
  r.gradNorm = std::sqrt(sq) * dataParallel();
  r.lr = options_.schedule.at(r.step);
  ++nextStep_;
  if (done()) {
    trace::Span last("sync", trace::Role::kPhase);
    ps.finish();
    r.syncS += last.close();
  }
  r.comm = ps.takeWaits();
  r.totalS = stepSpan.close();
  return r;
}

}  // namespace ts::wl

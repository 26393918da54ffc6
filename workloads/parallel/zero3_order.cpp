#include "workloads/parallel/zero3_order.h"

namespace ts::wl {

Zero3Order::Zero3Order(std::size_t groups, bool leading, int prefetch) : state_(groups), prefetch_(prefetch) {
  if (leading) {
    leading_ = 0;
    firstLayer_ = 1;
  }
}

void Zero3Order::startGather(std::size_t g) {
  if (state_[g].gathered) return;
  state_[g] = {true, true};
  issueGather(g);
}

void Zero3Order::gather(std::size_t g) {
  startGather(g);
  if (!state_[g].inFlight) return;
  waitGather(g);
  state_[g].inFlight = false;
}

void Zero3Order::prefetch(std::size_t from, bool forward) {
  std::size_t i = from;
  for (int k = 0; k < prefetch_; ++k) {
    if (forward ? i + 1 >= state_.size() : i <= firstLayer_) break;
    i = forward ? i + 1 : i - 1;
    startGather(i);
  }
  poll();
}

void Zero3Order::release(std::size_t g) {
  if (!state_[g].gathered) return;
  gather(g);  // a prefetch nobody used lands before its buffer goes
  dropGathered(g);
  state_[g].gathered = false;
}

void Zero3Order::releaseLayers() {
  for (std::size_t i = firstLayer_; i < state_.size(); ++i) release(i);
}

void Zero3Order::retireSent() {
  for (std::size_t i : sent_) retireGradients(i);
  sent_.clear();
}

void Zero3Order::sendGradients(std::size_t g) {
  // At most one group's gradients are sent while the next group's backward writes its own (the formula's two
  // gradient buffers, memory_account.cpp): the one sent before is retired only now, after that backward ran beside
  // it. Retiring it before the backward (as until 2026-11-30) left each reduce-scatter nothing to overlap with.
  retireSent();
  issueGradients(g);
  sent_.push_back(g);
  poll();
}

// Every layer's boundary, with parameters or not (activations, norms without them), polls: what is in flight
// progresses only when the library is entered.
void Zero3Order::layerForwardStarts(std::size_t g) {
  if (g == kNone) return poll();
  gather(g);
  prefetch(g, true);
}

void Zero3Order::layerForwardEnds(std::size_t g) {
  poll();
  // The last layer's backward comes next: it keeps its gathered values (forwardOnlyEnds lets them go).
  if (g != kNone && g + 1 != state_.size()) release(g);
}

void Zero3Order::layerBackwardStarts(std::size_t g) {
  if (g == kNone) return poll();
  takeGradientBuffer(g);
  gather(g);
  prefetch(g, false);
}

void Zero3Order::layerBackwardEnds(std::size_t g) {
  if (g == kNone) return poll();
  sendGradients(g);
  release(g);
}

void Zero3Order::forwardStarts() {
  if (leading_ == kNone) return;
  gather(leading_);
  prefetch(leading_, true);  // the first layers' gathers beside the embedding's compute
}

void Zero3Order::forwardOnlyEnds() {
  releaseLayers();  // the last layer, held for a backward that is not coming
  if (leading_ != kNone) release(leading_);
}

void Zero3Order::backwardStarts() {
  if (leading_ != kNone) takeGradientBuffer(leading_);
}

void Zero3Order::backwardEnds(bool lastMicroBatch) {
  if (leading_ != kNone) sendGradients(leading_);
  retireSent();
  releaseLayers();  // none is left gathered between micro-batches and steps (a pipeline stage's forward may follow)
  waitAll();
  microBatchEnds(lastMicroBatch);
  if (lastMicroBatch && leading_ != kNone) release(leading_);
}

}  // namespace ts::wl

#pragma once
// SyncBatchNorm's sums over the data-parallel group: batch norm's statistics become the whole batch's, so
// dp ranks of batch B train as one process of batch dp*B (without them each rank normalises its own B, as
// one process running dp micro-batches would). The layers ask through StepContext::bnSum; each ask is one
// blocking all-reduce of float64 (a layer's C+1 sums, its C centred squares, and its 2C+1 gradient sums),
// on the critical path, so all of its time is exposed communication.
#include "workloads/layers/layer.h"
#include "workloads/parallel/comm_tracker.h"

namespace ts::wl {

class SyncBatchNormGroup {
 public:
  SyncBatchNormGroup(Communicator& dp, double timeoutS, ProcessGroupId group) : tracker_(dp, timeoutS, group) {}
  void install(StepContext& ctx) {
    ctx.bnSum = [this](double* values, std::size_t n) { tracker_.sum(std::span<double>(values, n), true); };
  }
  StepComm takeStepComm() { return tracker_.take(); }

 private:
  CommTracker tracker_;
};

}  // namespace ts::wl

#pragma once
// The tensor-parallel group's sums: the layers ask for them through StepContext::tpSum (Megatron's f and
// g: one all-reduce after each row-parallel forward, one after each column-parallel input gradient).
// They sit on the critical path, so all of their time is exposed communication.
#include "workloads/layers/layer.h"
#include "workloads/parallel/comm_tracker.h"

namespace ts::wl {

class TensorParallelGroup {
 public:
  TensorParallelGroup(Communicator& tp, double timeoutS, ProcessGroupId group) : tracker_(tp, timeoutS, group) {}
  void install(StepContext& ctx);
  // The sum of v over the group (the gradient norm's tensor-parallel slices); counted as communication.
  double sum(double v) { return tracker_.sum(v, true); }
  void sum(std::span<double> v) { tracker_.sum(v, true); }
  StepComm takeStepComm() { return tracker_.take(); }

 private:
  CommTracker tracker_;
};

}  // namespace ts::wl

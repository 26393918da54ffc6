#include "workloads/parallel/tensor_parallel.h"

namespace ts::wl {

void TensorParallelGroup::install(StepContext& ctx) {
  ctx.tpSum = [this](const Tensor& t) {
    t.device->synchronize();  // the communicator's stream must see the values
    tracker_.run({CollectiveKind::kAllReduce, t.data, t.data, t.numel(), DType::kFloat32, RedOp::kSum});
  };
}

double TensorParallelGroup::sum(double v) {
  comm_.copyIn(0, scalar_.get(), &v, sizeof(double));
  tracker_.run({CollectiveKind::kAllReduce, scalar_.get(), scalar_.get(), 1, DType::kFloat64, RedOp::kSum});
  double out = 0;
  comm_.copyOut(0, &out, scalar_.get(), sizeof(double));
  return out;
}

}  // namespace ts::wl

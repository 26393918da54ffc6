#include "workloads/parallel/tensor_parallel.h"

#include "comm/collectives/collective.h"

namespace ts::wl {

void TensorParallelGroup::install(StepContext& ctx) {
  ctx.tpSum = [this](const Tensor& t) {
    t.device->synchronize();  // the communicator's stream must see the values
    tracker_.run({&collectives::all_reduce(), t.data, t.data, t.numel(), DType::kFloat32, RedOp::kSum});
  };
}

}  // namespace ts::wl

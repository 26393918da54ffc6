#pragma once
// The run's state as checkpoint pieces (workloads/checkpoint/checkpoint.h): the tensors this rank holds
// of the parameters, the optimizer state and the buffers, each placed in its whole tensor (region.h), so
// that a checkpoint saved by one layout loads into another.
//   kLoad  what the rank keeps between steps and fills on a resume: its parameters (whole, a tensor-
//          parallel slice, or ZeRO-3's pieces), its optimizer state (all of it, or its shard), and the
//          buffers of its layers (a pipeline stage's);
//   kSave  what it writes: of its parameters and their optimizer state, the pieces it updates (ZeRO and
//          the parameter server's chunks), or the whole ones when it is data-parallel rank 0 (every
//          data-parallel rank holds the same); of a tensor every tensor-parallel rank holds alike, tensor-
//          parallel rank 0's. Every element of every whole tensor is then written exactly once. Where the
//          data-parallel replicas differ (GradientSync::divergence: model averaging between averagings), the
//          other data-parallel ranks write their own copies of what differs too, as replicaName's tensors
//          (StateKind::kReplica), which a resume on as many data-parallel ranks reads back into each rank.
#include <string>
#include <vector>

#include "workloads/checkpoint/checkpoint.h"
#include "workloads/optim/optimizer.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

enum class StateUse { kLoad, kSave };

struct StateTensor {
  std::string tensor;  // the whole tensor's name
  ckpt::StateKind kind;
  ckpt::Region region;  // where this rank's values sit in it
  Tensor* value;        // region.elements() values on the model's device
};

// The checkpoint's name of replica `replica`'s own copy of `tensor` (replica > 0; the mesh's replicaIndex):
// "<tensor>@dp<replica>".
std::string replicaName(const std::string& tensor, int replica);

std::vector<StateTensor> stateTensors(GradientSync& sync, Optimizer& optimizer, const ModelPart& part, const Mesh& mesh,
                                      StateUse use);

}  // namespace ts::wl

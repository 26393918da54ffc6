#pragma once
// Whole-tensor sums from the parts the ranks hold. Along the data-parallel axis a ZeRO or parameter-server
// piece is its holder's alone, and a whole tensor every rank holds alike; along the tensor-parallel axis a
// slice is its holder's, and an unsliced tensor every rank holds alike. Adding, over both groups, the
// copies that count (countsHere) counts every element of every tensor once: checkpoints write exactly
// those, and LAMB's norms add exactly those.
#include <vector>

#include "workloads/layers/layer.h"
#include "workloads/optim/optimizer.h"
#include "workloads/parallel/gradient_sync.h"
#include "workloads/parallel/mesh.h"
#include "workloads/parallel/tensor_parallel.h"

namespace ts::wl {

// Whether this rank's copy of p (a parameter, or a piece of one) is the one counted.
bool countsHere(const Param& p, const Mesh& mesh);

// LAMB's Optimizer::PartSums for this rank's update parameters (the sync's updateParams, pieces of the
// part's parameters or the parameters themselves): each pair is placed at its whole tensor's index in the
// part (the same list on every rank of the data- and tensor-parallel groups), the counted ones added over
// the data-parallel group when the layout shards (ZeRO, the parameter server) and over the tensor-parallel
// group (tp may be null), and every pair read back from its tensor's. Under expert parallelism the experts' pairs
// are added over their own copies (GradientSync::sumOverExpertGroup: the same experts in the same places), the
// dense ones' over every replica.
Optimizer::PartSums lambPartSums(const std::vector<Param*>& updateParams, const ModelPart& part, const Mesh& mesh,
                                 GradientSync& sync, TensorParallelGroup* tp);

}  // namespace ts::wl

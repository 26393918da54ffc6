#pragma once
// The L2 norm of every parameter after training, over the whole model: a fingerprint of the weights, so
// that two runs (another layout, another machine) can be compared without their checkpoints.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workloads/layers/layer.h"
#include "workloads/parallel/mesh.h"
#include "workloads/trainer.h"

namespace ts {

class Bootstrap;

struct ParameterNorms {
  std::map<std::string, double> norms;
  std::int64_t count = 0;  // the parameters (elements) they cover: the whole model's
  // Weights that diverged (a run stopped by a NaN loss) have NaN or infinite norms: no fingerprint.
  bool finite() const;
};

// Pipeline stages each know their own parameters (`params`: the ones this rank trains), tensor-parallel
// ranks their slices (summed); data-parallel replicas are equal, and the first of each group speaks.
// Collective when the mesh has more than one rank.
ParameterNorms gatherParameterNorms(Bootstrap& boot, const wl::Mesh& mesh, wl::Trainer& trainer);

}  // namespace ts

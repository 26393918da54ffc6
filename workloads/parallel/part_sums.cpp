#include "workloads/parallel/part_sums.h"

#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {

bool countsHere(const Param& p, const Mesh& mesh) {
  // An expert's copies are its expert-data-parallel group's: the first of them counts it.
  const int copy = p.expert ? mesh.coordinate(kExpertReplicaAxes) : mesh.replicaIndex();
  return (!p.pieceOf.empty() || copy == 0) && (p.tpShard() || mesh.coordinate(GroupKind::kTp) == 0);
}

Optimizer::PartSums lambPartSums(const std::vector<Param*>& updateParams, const ModelPart& part, const Mesh& mesh,
                                 GradientSync& sync, TensorParallelGroup* tp) {
  std::unordered_map<std::string, std::size_t> indexOf;
  for (std::size_t j = 0; j < part.params.size(); ++j) indexOf[part.params[j]->name] = j;
  std::vector<std::size_t> tensorOf;  // per update parameter: its whole tensor's index in the part
  std::vector<bool> counted;
  std::vector<std::size_t> expertTensors;  // expert parallel: the experts' indices, summed over their own group
  if (mesh.size(kExpertAxes) > 1)
    for (std::size_t j = 0; j < part.params.size(); ++j)
      if (part.params[j]->expert) expertTensors.push_back(j);
  for (const Param* p : updateParams) {
    const std::string& name = p->pieceOf.empty() ? p->name : p->pieceOf;
    const auto it = indexOf.find(name);
    if (it == indexOf.end()) throw Error(fmt::format("internal: {} is not a parameter of this rank's part", name));
    tensorOf.push_back(it->second);
    counted.push_back(countsHere(*p, mesh));
  }
  const LayoutOptions& l = mesh.layout();
  const bool pieces = l.replicas() > 1 && (l.zero > 0 || l.sync == SyncKind::kParameterServer);
  const std::size_t tensors = part.params.size();
  return [tensorOf, counted, pieces, tensors, expertTensors, &sync, tp](std::span<double> sums) {
    std::vector<double> whole(2 * tensors, 0.0);
    for (std::size_t i = 0; i < tensorOf.size(); ++i)
      if (counted[i]) {
        whole[2 * tensorOf[i]] += sums[2 * i];
        whole[2 * tensorOf[i] + 1] += sums[2 * i + 1];
      }
    if (pieces && !expertTensors.empty()) {
      // Another rank of the replicas holds other experts in the experts' places: those pairs over their copies alone.
      std::vector<double> experts;
      for (std::size_t j : expertTensors) {
        experts.push_back(std::exchange(whole[2 * j], 0.0));
        experts.push_back(std::exchange(whole[2 * j + 1], 0.0));
      }
      sync.sumOverGroup(whole);
      sync.sumOverExpertGroup(experts);
      for (std::size_t k = 0; k < expertTensors.size(); ++k) {
        whole[2 * expertTensors[k]] = experts[2 * k];
        whole[2 * expertTensors[k] + 1] = experts[2 * k + 1];
      }
    } else if (pieces) {
      sync.sumOverGroup(whole);
    }
    if (tp) tp->sum(whole);
    for (std::size_t i = 0; i < tensorOf.size(); ++i) {
      sums[2 * i] = whole[2 * tensorOf[i]];
      sums[2 * i + 1] = whole[2 * tensorOf[i] + 1];
    }
  };
}

}  // namespace ts::wl

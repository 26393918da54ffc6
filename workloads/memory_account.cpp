#include "workloads/memory_account.h"

namespace ts::wl {

ModelStateBytes modelStateFormula(const ModelStateFacts& f) {
  if (f.expertElements > 0 && f.expertReplicas != f.replicas) {  // the dense part and the experts, each over its N
    ModelStateFacts dense = f, experts = f;
    dense.elements -= f.expertElements;
    dense.expertElements = experts.expertElements = 0;
    experts.elements = f.expertElements;
    experts.replicas = f.expertReplicas;
    experts.leadingElements = 0;  // the embeddings are dense
    experts.largestLayerElements = f.largestExpertLayerElements;
    const ModelStateBytes a = modelStateFormula(dense), b = modelStateFormula(experts);
    ModelStateBytes sum;
    sum.parameters = a.parameters + b.parameters;
    sum.gradients = a.gradients + b.gradients;
    sum.optimizer = a.optimizer + b.optimizer;
    sum.masterWeights = a.masterWeights + b.masterWeights;
    sum.inFlightParameters = a.inFlightParameters + b.inFlightParameters;
    sum.inFlightGradients = a.inFlightGradients + b.inFlightGradients;
    return sum;
  }
  const double psi = 4.0 * static_cast<double>(f.elements), n = f.replicas;
  ModelStateBytes b;
  if (f.parameterServer) {
    b.parameters = b.gradients = psi;
    b.optimizer = f.server ? f.optimizerSlots * psi / f.psShards : 0;
    if (f.masterWeights) b.masterWeights = f.server ? psi / f.psShards : 0;
    return b;
  }
  if (f.zero >= 3 && f.replicas > 1) {
    // Forward: the layer running and the --prefetch layers after it; backward: its gradients written while the
    // layer before's are sent. The leading group (embeddings) is gathered, and its gradients held, all step.
    const double layer = 4.0 * static_cast<double>(f.largestLayerElements),
                 leading = 4.0 * static_cast<double>(f.leadingElements);
    b.inFlightParameters = leading + (f.prefetch + 1) * layer;
    b.inFlightGradients = leading + 2 * layer;
  }
  b.parameters = f.zero >= 3 ? psi / n : psi;
  b.gradients = f.zero >= 2 ? psi / n : psi;
  b.optimizer = f.zero >= 1 ? f.optimizerSlots * psi / n : f.optimizerSlots * psi;
  if (f.masterWeights) b.masterWeights = f.zero >= 1 ? psi / n : psi;
  return b;
}

std::size_t MemoryAccount::modelStates() const {
  return steps.peakOf(MemoryKind::kParameters) + steps.peakOf(MemoryKind::kGradients) + steps.peakOf(MemoryKind::kOptimizer) +
         steps.peakOf(MemoryKind::kMasterWeights);
}

nlohmann::json MemoryAccount::toJson() const {
  nlohmann::json peaks = nlohmann::json::object();
  for (const auto& [name, kind] : EnumNames<MemoryKind>::kNames) peaks[std::string(name)] = steps.peakOf(kind);
  return {{"peak_bytes", peaks},
          {"total_peak_bytes", steps.totalPeak},
          {"setup_peak_bytes", setupPeak},
          {"model_states_bytes", modelStates()},
          {"formula_bytes", wl::toJson(formula)}};
}

nlohmann::json toJson(const ModelStateBytes& f) {
  return {
      {"parameters", f.parameters}, {"gradients", f.gradients},
      {"optimizer", f.optimizer},   {"master_weights", f.masterWeights},
      {"model_states", f.total()},  {"in_flight", {{"parameters", f.inFlightParameters}, {"gradients", f.inFlightGradients}}}};
}

}  // namespace ts::wl

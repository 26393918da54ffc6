#pragma once
// A rank's memory account: what the allocator counted by kind during the training steps (and the peak of
// setup, while the layout materialises its share of the model), beside what the layout should hold in
// model states by the ZeRO paper's formulas (Rajbhandari et al. 2020, section 5), so a record shows
// whether a layout saves the memory it exists for.
//
// With Psi the elements of the parameters this rank trains (all, its tensor-parallel slices or its
// pipeline stage's layers), N the data-parallel ranks, 4 bytes an element and K optimizer slots per
// element (Adam and LAMB 2, SGD 1):
//   --zero 0   parameters 4 Psi, gradients 4 Psi,   optimizer 4K Psi
//   --zero 1   parameters 4 Psi, gradients 4 Psi,   optimizer 4K Psi / N
//   --zero 2   parameters 4 Psi, gradients 4 Psi/N, optimizer 4K Psi / N
//   --zero 3   parameters 4 Psi/N, gradients 4 Psi/N, optimizer 4K Psi / N
//   --sync ps  parameters and gradients 4 Psi; optimizer 4K Psi / S on the S servers, none on the workers
// Mixed precision adds float32 master weights: 4 Psi, or 4 Psi / N when the optimizer state is sharded.
// The formulas leave out what a layout holds in flight (ZeRO-2's buckets being sent, ZeRO-3's gathered
// layer): the measured figures include it.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "workloads/memory.h"

namespace ts::wl {

struct ModelStateFacts {
  std::size_t elements = 0;    // Psi: this rank's part of the model
  int replicas = 1, zero = 0;  // N: the ranks ZeRO shards over (kReplicaAxes)
  // Expert parallel: of `elements`, the experts' (Param::expert), whose copies, and ZeRO's shards, are the expert
  // replicas' (kExpertReplicaAxes: N / ep); each kind of element takes its own N in the formulas below.
  std::size_t expertElements = 0;
  int expertReplicas = 1;
  bool parameterServer = false, server = false;  // --sync ps, and whether this rank is one of the servers
  int psShards = 1;
  int optimizerSlots = 2;
  bool masterWeights = false;  // bfloat16 / float16 mixed precision
  // ZeRO-3's working set beyond the paper's count: the parameters held gathered for the whole step (the
  // transformer's embeddings), the largest layer's (padded to the ranks), and how many layers are gathered
  // ahead (--prefetch).
  std::size_t leadingElements = 0, largestLayerElements = 0;
  int prefetch = 0;
  // Expert parallel: ZeRO-3 gathers a layer's experts apart from its dense parameters (over their own replicas), so
  // largestLayerElements counts a layer's dense parameters and this its experts' (padded to the expert replicas).
  std::size_t largestExpertLayerElements = 0;
};

struct ModelStateBytes {
  double parameters = 0, gradients = 0, optimizer = 0, masterWeights = 0;
  // What the layout holds in flight on top, at most (ZeRO-3: the gathered layers and the gradient buffers of
  // the layer being written and the one being sent, each counted as the largest layer); 0 for the others,
  // whose in-flight buffers are views.
  double inFlightParameters = 0, inFlightGradients = 0;
  double total() const { return parameters + gradients + optimizer + masterWeights; }  // the ZeRO paper's count
};
ModelStateBytes modelStateFormula(const ModelStateFacts& f);
// {"parameters", "gradients", "optimizer", "master_weights", "model_states" (their sum), "in_flight": {...}}: as a
// train record's formula_bytes and a train_plan record state them.
nlohmann::json toJson(const ModelStateBytes& f);

struct MemoryAccount {
  MemoryCounters steps;       // the training steps' peaks by kind (reset after setup)
  std::size_t setupPeak = 0;  // the most in use while building (this rank's share of the model, its buffers)
  ModelStateBytes formula;
  // The measured model states: each model-state kind's peak during the steps, added.
  std::size_t modelStates() const;
  nlohmann::json toJson() const;
};

}  // namespace ts::wl

#pragma once
// What a rank's memory holds, by category, as the allocator counts it: every block a Device hands out is
// tagged with one MemoryKind, so the record can say where the memory went (parameters, gradients,
// optimizer state, ...) and compare the model states with what the layout should hold (memory_account.h).
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

#include "base/enum_names.h"

namespace ts::wl {

enum class MemoryKind {
  kParameters,     // the model's weights this rank holds (all, its slices, its stage's, or a ZeRO-3 shard + gathered layers)
  kGradients,      // their gradients (full, bucket views, or a shard + the buckets in flight)
  kOptimizer,      // the optimizer's state (Adam's m and v, momentum, LAMB's scratch)
  kMasterWeights,  // mixed precision's float32 copies of the weights
  kActivations,    // what the layers keep for the backward, their outputs and input gradients
  kCommBuffers,    // buffers that exist only to communicate (pipeline sends and receives)
  kWorkspace,      // everything else (staged batches)
};
inline constexpr std::size_t kMemoryKinds = 7;

// Bytes per kind: in use now, and the most in use at once since the last reset (each kind's own peak, and
// the peak of the total, which is at most the sum of the kinds' peaks).
struct MemoryCounters {
  std::array<std::size_t, kMemoryKinds> inUse{}, peak{};
  std::size_t total = 0, totalPeak = 0;
  std::size_t inUseOf(MemoryKind k) const { return inUse[static_cast<std::size_t>(k)]; }
  std::size_t peakOf(MemoryKind k) const { return peak[static_cast<std::size_t>(k)]; }
  void add(MemoryKind k, std::size_t bytes);
  void remove(MemoryKind k, std::size_t bytes);
  void resetPeaks();  // peaks = what is in use now
};

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::MemoryKind> {
  static constexpr std::pair<std::string_view, wl::MemoryKind> kNames[] = {
      {"parameters", wl::MemoryKind::kParameters},   {"gradients", wl::MemoryKind::kGradients},
      {"optimizer", wl::MemoryKind::kOptimizer},     {"master_weights", wl::MemoryKind::kMasterWeights},
      {"activations", wl::MemoryKind::kActivations}, {"comm_buffers", wl::MemoryKind::kCommBuffers},
      {"workspace", wl::MemoryKind::kWorkspace}};
};
}  // namespace ts

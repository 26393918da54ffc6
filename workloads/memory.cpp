#include "workloads/memory.h"

#include <algorithm>

namespace ts::wl {

void MemoryCounters::add(MemoryKind k, std::size_t bytes) {
  const auto i = static_cast<std::size_t>(k);
  inUse[i] += bytes;
  peak[i] = std::max(peak[i], inUse[i]);
  total += bytes;
  totalPeak = std::max(totalPeak, total);
}

void MemoryCounters::remove(MemoryKind k, std::size_t bytes) {
  inUse[static_cast<std::size_t>(k)] -= bytes;
  total -= bytes;
}

void MemoryCounters::resetPeaks() {
  peak = inUse;
  totalPeak = total;
}

}  // namespace ts::wl

// A layout from the op's shape: the sweep asks it for a size in bytes, a training step for the count it
// passes, and both get the bytes the record counts (the whole buffer for gathered, scattered and
// exchanged ops), so a step's collectives compare with the sweep's at the same bytes.
#include <fmt/format.h>

#include "base/error.h"
#include "comm/collectives/collective.h"

namespace ts {
namespace {

// Blocks of `count` elements in the buffer the record counts: one (flat), one per rank (the others), or for per-pair
// counts the busiest rank's units (n for uniform counts, as alltoall).
std::size_t blocksCounted(const Collective& c, int nranks, const ExchangeMatrix* exchange) {
  if (c.perPairCounts()) {
    const ExchangeMatrix& m = exchange ? *exchange : uniformExchange(nranks);
    if (m.ranks() != nranks)
      throw Error(fmt::format("internal: {} on {} ranks given an exchange matrix of {}", c.name(), nranks, m.ranks()));
    return static_cast<std::size_t>(m.busiest());
  }
  return c.shape() == BufferShape::kFlat ? 1 : static_cast<std::size_t>(nranks);
}

}  // namespace

CollectiveLayout Collective::layoutOfCount(std::size_t count, std::size_t eltSize, int nranks,
                                           const ExchangeMatrix* exchange) const {
  const BufferShape s = shape();
  const std::size_t blocks = blocksCounted(*this, nranks, exchange);
  const bool wholeSend = s == BufferShape::kScattered || s == BufferShape::kExchanged;
  const bool wholeRecv = s == BufferShape::kGathered || s == BufferShape::kExchanged;
  // Per-pair counts: every rank's buffers are sized for the busiest rank's (a rank's own blocks fill their start).
  return {count, wholeSend ? count * blocks : count, wholeRecv ? count * blocks : count, count * blocks * eltSize};
}

CollectiveLayout Collective::layout(std::size_t bytes, std::size_t eltSize, int nranks, const ExchangeMatrix* exchange) const {
  return layoutOfCount(bytes / (eltSize * blocksCounted(*this, nranks, exchange)), eltSize, nranks, exchange);
}

}  // namespace ts

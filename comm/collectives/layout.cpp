// A layout from the op's shape: the sweep asks it for a size in bytes, a training step for the count it
// passes, and both get the bytes the record counts (the whole buffer for gathered, scattered and
// exchanged ops), so a step's collectives compare with the sweep's at the same bytes.
#include "comm/collectives/collective.h"

namespace ts {
namespace {

// Blocks of `count` elements in the buffer the record counts.
std::size_t blocksCounted(BufferShape s, int nranks) { return s == BufferShape::kFlat ? 1 : static_cast<std::size_t>(nranks); }

}  // namespace

CollectiveLayout Collective::layoutOfCount(std::size_t count, std::size_t eltSize, int nranks) const {
  const BufferShape s = shape();
  const std::size_t n = static_cast<std::size_t>(nranks);
  const bool wholeSend = s == BufferShape::kScattered || s == BufferShape::kExchanged;
  const bool wholeRecv = s == BufferShape::kGathered || s == BufferShape::kExchanged;
  return {count, wholeSend ? count * n : count, wholeRecv ? count * n : count, count * blocksCounted(s, nranks) * eltSize};
}

CollectiveLayout Collective::layout(std::size_t bytes, std::size_t eltSize, int nranks) const {
  return layoutOfCount(bytes / (eltSize * blocksCounted(shape(), nranks)), eltSize, nranks);
}

}  // namespace ts

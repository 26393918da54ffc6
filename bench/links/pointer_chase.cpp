#include "bench/links/pointer_chase.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kWordsPerLine = kChaseLineBytes / sizeof(std::uint32_t);
}  // namespace

std::size_t pointerChaseSpanBytes(std::size_t l2Bytes) {
  const std::size_t span = std::max<std::size_t>(8 * l2Bytes, 256 * kMiB);
  return (span + kMiB - 1) / kMiB * kMiB;
}

std::vector<std::uint32_t> randomCycle(std::size_t spanBytes) {
  const std::size_t elems = spanBytes / kChaseLineBytes;
  // The chain holds word indices (element * 16) as 32-bit values: 16 GiB at most.
  if (elems == 0 || elems * kWordsPerLine > UINT32_MAX)
    throw Error(fmt::format("internal: a pointer chase over {} bytes (1 line to 16 GiB)", spanBytes));
  std::vector<std::uint32_t> order(elems);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
  std::vector<std::uint32_t> chain(elems * kWordsPerLine, 0);
  for (std::size_t i = 0; i < elems; ++i)
    chain[static_cast<std::size_t>(order[i]) * kWordsPerLine] =
        static_cast<std::uint32_t>(order[(i + 1) % elems] * kWordsPerLine);
  return chain;
}

}  // namespace ts

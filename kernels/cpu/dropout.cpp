// Dropout with masks keyed by what an element is, not where it sits (cpu_ops.h's dropoutForward/Backward).
//
// The keep decision for an element is a hash of (seed, layer, step, the element's global row, its global
// column): the sample it belongs to (the dataset's index, times the sequence length plus the token's
// position for a language model) and its feature in the one-device tensor. A data-parallel rank holding
// other samples, a tensor-parallel rank holding a slice of the features, a micro-batch or a pipeline stage
// all draw the same mask for the same element, so every layout trains as one process does; and the backward
// recomputes the mask instead of storing it. splitmix64's finaliser, chained over the key's parts, gives
// 64 well-mixed bits; the top 24 are compared with p 2^24 (p a multiple of 2^-24 at most 6e-8 off).
//
// Cost: one read and one write per element, and about 20 integer operations for the hash.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/parallel_chunks.h"

namespace ts::cpu {
namespace {

constexpr std::size_t kGrain = 1 << 14;

inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The multiplier a kept element gets (1 / (1 - p)) or 0, element (row r, column c) of the held block.
struct Mask {
  const DropoutKeys& k;
  std::uint64_t base;  // the hash of (seed, layer, step)
  std::uint64_t threshold;
  float scale;
  explicit Mask(const DropoutKeys& keys)
      : k(keys),
        base(mix(mix(mix(keys.seed) ^ keys.layer) ^ static_cast<std::uint64_t>(keys.step))),
        threshold(static_cast<std::uint64_t>(std::llround(double(keys.p) * double(1 << 24)))),
        scale(1.0f / (1.0f - keys.p)) {}
  std::uint64_t rowKey(std::size_t r) const {
    const std::int64_t sample = k.firstSample + std::int64_t(r) / k.rowsPerSample;
    return mix(base ^ static_cast<std::uint64_t>(sample * k.rowsPerSample + std::int64_t(r % k.rowsPerSample)));
  }
  float at(std::uint64_t row, std::size_t c) const {
    return (mix(row ^ static_cast<std::uint64_t>(k.colOffset + std::int64_t(c))) >> 40) >= threshold ? scale : 0.0f;
  }
};

template <class Element>
void forEachRow(std::size_t rows, std::size_t cols, const DropoutKeys& keys, Element&& element) {
  const Mask mask(keys);
  parallelChunks(rows, std::max<std::size_t>(1, kGrain / std::max<std::size_t>(1, cols)), [&](std::size_t a, std::size_t z) {
    for (std::size_t r = a; r < z; ++r) {
      const std::uint64_t row = mask.rowKey(r);
      for (std::size_t c = 0; c < cols; ++c) element(r * cols + c, mask.at(row, c));
    }
  });
}

}  // namespace

void dropoutForward(float* out, const float* inp, std::size_t rows, std::size_t cols, const DropoutKeys& keys) {
  forEachRow(rows, cols, keys, [&](std::size_t i, float m) { out[i] = inp[i] * m; });
}

void dropoutBackward(float* dinp, const float* dout, std::size_t rows, std::size_t cols, const DropoutKeys& keys, Write write) {
  if (write == Write::kOverwrite)
    forEachRow(rows, cols, keys, [&](std::size_t i, float m) { dinp[i] = dout[i] * m; });
  else
    forEachRow(rows, cols, keys, [&](std::size_t i, float m) { dinp[i] += dout[i] * m; });
}

}  // namespace ts::cpu

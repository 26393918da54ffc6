#include "workloads/data/augment.h"

#include <algorithm>

#include "workloads/data/counter_rng.h"

namespace ts::data {

CropFlip drawCropFlip(std::uint64_t seed, std::int64_t position, int pad) {
  CounterRng rng(hashKey(seed, Stream::kAugment, position));
  const auto span = static_cast<std::uint64_t>(2 * pad + 1);
  CropFlip c;
  c.dx = static_cast<int>(rng.below(span));
  c.dy = static_cast<int>(rng.below(span));
  c.flip = rng.below(2) == 1;
  return c;
}

void applyCropFlip(float* image, std::int64_t C, std::int64_t H, std::int64_t W, const CropFlip& c, std::vector<float>& scratch,
                   int pad) {
  scratch.assign(image, image + C * H * W);
  for (std::int64_t ch = 0; ch < C; ++ch)
    for (std::int64_t y = 0; y < H; ++y)
      for (std::int64_t x = 0; x < W; ++x) {
        // Output (y, x) is padded-image pixel (y + dy, x' + dx), x' mirrored when flipped; outside the
        // original image it is padding.
        const std::int64_t sy = y + c.dy - pad, sx = (c.flip ? W - 1 - x : x) + c.dx - pad;
        const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
        image[(ch * H + y) * W + x] = inside ? scratch[static_cast<std::size_t>((ch * H + sy) * W + sx)] : 0.0f;
      }
}

}  // namespace ts::data

#pragma once
// Data augmentation of image samples [C, H, W] as CIFAR-10 training uses it (--augment crop-flip): pad
// `pad` pixels of zeros on every side (zero in the normalised space: the padding is the data's mean, where
// torchvision pads the raw image with black), take a random H x W window of the padded image, and flip it
// left to right with probability 1/2. The draws are a pure function of (seed, global sample position),
// so every layout and every rerun sees the same images (a batch stays a function of its step), and each
// epoch visits a new crop of each sample. Held-out data is never augmented.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"

namespace ts::data {

enum class Augment { kNone, kCropFlip };

struct CropFlip {
  int dx = 0, dy = 0;  // the window's corner in the padded image: 0 .. 2 pad
  bool flip = false;
};
constexpr int kCropPad = 4;

CropFlip drawCropFlip(std::uint64_t seed, std::int64_t position, int pad = kCropPad);
// Applies c to image [C, H, W] in place (scratch: C H W floats, reused).
void applyCropFlip(float* image, std::int64_t C, std::int64_t H, std::int64_t W, const CropFlip& c, std::vector<float>& scratch,
                   int pad = kCropPad);

}  // namespace ts::data

namespace ts {
template <>
struct EnumNames<data::Augment> {
  static constexpr std::pair<std::string_view, data::Augment> kNames[] = {{"none", data::Augment::kNone},
                                                                          {"crop-flip", data::Augment::kCropFlip}};
};
}  // namespace ts

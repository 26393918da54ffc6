// CNN: a ResNet of basic blocks. Stem: a 3x3 conv (CIFAR) or a 7x7/2 conv and a 3x3/2 max pool (ImageNet),
// each followed by BatchNorm and ReLU; then one stage per entry of `widths` with `blocks` basic blocks
// (the first of each stage after the first halves the resolution); global average pooling; dropout with
// --dropout; a Linear head. Tensor parallel: each basic block split by channels (convolution.h); the stem, the shortcuts and
// the head replicated. Forward FLOPs: the sum of the convolutions' 2 N K P Q C R S plus the head's 2 N C classes
// (BatchNorm, ReLU and pooling are memory-bound and not counted).
//
// --recompute full: each basic block is one recomputed unit (recompute.h): its convolutions', batch norms' and
// ReLUs' buffers shared with the other blocks', its input and output kept; batch norm's running statistics stay
// each block's own and are updated by the first forward only. selective recomputes nothing (no attention).
//
// Layout: on the CPU with oneDNN the activations are channels-last (NHWC) from the stem on, the data's NCHW
// images transposed once in front (ChannelsLast): oneDNN convolves NHWC directly, while NCHW tensors went
// through a reorder into its blocked layout and back around every convolution (10 of the 25 ms the
// convolutions of cnn tiny took per step at batch 32 on one core; the step 35.5 ms). `--set layout=nchw`
// keeps NCHW (the CUDA path's only layout, and im2col's).
#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/convolution.h"
#include "workloads/layers/activation.h"
#include "workloads/layers/convolution.h"
#include "workloads/layers/dropout.h"
#include "workloads/layers/linear.h"
#include "workloads/models/sequential_classifier.h"

namespace ts::wl {
namespace {

ConvLayout layoutFor(const ModelConfig& c, const Device& device) {
  if (c.layout == ImageLayoutChoice::kNchw) return ConvLayout::kNchw;
  const bool possible = !device.cuda() && cpu::haveOneDnn();
  if (c.layout == ImageLayoutChoice::kNhwc && !possible)
    throw UsageError(
        fmt::format("cnn: layout nhwc needs the CPU with oneDNN ({})",
                    device.cuda() ? "CUDA runs nchw" : "this build has no oneDNN: its im2col convolution runs nchw"));
  return possible ? ConvLayout::kNhwc : ConvLayout::kNchw;
}

class Cnn final : public SequentialClassifier {
 public:
  Cnn(const ModelConfig& c, std::int64_t batch, Device& device, TensorParallel tp)
      : SequentialClassifier(c, batch, device), layout_(layoutFor(c, device)) {
    const Init init(c.seed);
    const std::int64_t cin = c.inputShape[0];
    std::int64_t h = c.inputShape[1], w = c.inputShape[2], ch = c.widths[0];
    const bool imagenet = c.stem == CnnStem::kImagenet;
    const int k = imagenet ? 7 : 3, stride = imagenet ? 2 : 1;
    if (layout_ == ConvLayout::kNhwc) add(std::make_unique<ChannelsLast>(arena_, batch, cin, h, w));
    auto stem = std::make_unique<Conv2d>(
        arena_, init, "conv1", cpu::Conv2dShape{int(batch), int(cin), int(h), int(w), int(ch), k, k, stride, k / 2}, layout_);
    // Its input is the data (behind the transpose, when there is one): no input gradient.
    stem->skipInputGradient();
    h = stem->shape().P();
    w = stem->shape().Q();
    add(std::move(stem));
    add(std::make_unique<BatchNorm2d>(arena_, "bn1", batch, ch, h, w, layout_));
    add(std::make_unique<Activation>(arena_, ActivationKind::kRelu, imageShape(batch, ch, h, w, layout_)));
    if (imagenet) {
      auto pool = std::make_unique<MaxPool2d>(
          arena_, MaxPool2dConfig{.n = batch, .c = ch, .h = h, .w = w, .k = 3, .stride = 2, .pad = 1, .layout = layout_});
      h = pool->outH();
      w = pool->outW();
      add(std::move(pool));
    }
    std::size_t unit = 0;  // --recompute full: each basic block is one unit (recompute.h)
    for (std::size_t s = 0; s < c.widths.size(); ++s)
      for (std::int64_t b = 0; b < c.blocks[s]; ++b) {
        const BasicBlockConfig config{.n = batch,
                                      .cin = ch,
                                      .h = h,
                                      .w = w,
                                      .cout = c.widths[s],
                                      .stride = (s > 0 && b == 0) ? 2 : 1,
                                      .layout = layout_,
                                      .tpRank = tp.rank,
                                      .tpRanks = tp.ranks};
        const std::string name = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
        const auto [outH, outW] = BasicBlock::outputSize(config);
        const std::function<std::unique_ptr<Layer>()> build = [&] {
          return std::make_unique<BasicBlock>(arena_, init, name, config);
        };
        if (c.recompute == Recompute::kFull) {
          addRecomputedUnit({.index = unit++,
                             .inShape = imageShape(batch, ch, h, w, layout_),
                             .outShape = imageShape(batch, config.cout, outH, outW, layout_)},
                            build);
        } else {
          add(build());
        }
        ch = c.widths[s];
        h = outH;
        w = outW;
      }
    add(std::make_unique<GlobalAvgPool>(arena_, batch, ch, h, w, layout_));
    if (c.dropout > 0)
      add(std::make_unique<Dropout>(arena_, "dropout", DropoutConfig{.seed = c.seed, .p = c.dropout, .rows = batch, .cols = ch}));
    add(std::make_unique<Linear>(arena_, init, "fc", LinearConfig{.rows = batch, .in = ch, .out = c.classes}));
    finish();
  }
  std::optional<ConvLayout> imageLayout() const override { return layout_; }

 private:
  ConvLayout layout_;
};

}  // namespace

std::unique_ptr<Model> makeCnn(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp) {
  return std::make_unique<Cnn>(config, batch, device, tp);
}

}  // namespace ts::wl

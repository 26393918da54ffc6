// CNN: a ResNet of basic blocks. Stem: a 3x3 conv (CIFAR) or a 7x7/2 conv and a 3x3/2 max pool (ImageNet),
// each followed by BatchNorm and ReLU; then one stage per entry of `widths` with `blocks` basic blocks
// (the first of each stage after the first halves the resolution); global average pooling; a Linear
// head. Tensor parallel: each basic block split by channels (convolution.h); the stem, the shortcuts and
// the head replicated. Forward FLOPs: the sum of the convolutions' 2 N K P Q C R S plus the head's 2 N C classes
// (BatchNorm, ReLU and pooling are memory-bound and not counted).
#include "workloads/layers/activation.h"
#include "workloads/layers/convolution.h"
#include "workloads/layers/linear.h"
#include "workloads/models/sequential_classifier.h"

namespace ts::wl {
namespace {

class Cnn final : public SequentialClassifier {
 public:
  Cnn(const ModelConfig& c, std::int64_t batch, Device& device, TensorParallel tp) : SequentialClassifier(c, batch, device) {
    const Init init(c.seed);
    const std::int64_t cin = c.inputShape[0];
    std::int64_t h = c.inputShape[1], w = c.inputShape[2], ch = c.widths[0];
    const bool imagenet = c.stem == "imagenet";
    const int k = imagenet ? 7 : 3, stride = imagenet ? 2 : 1;
    auto stem = std::make_unique<Conv2d>(arena_, init, "conv1",
                                         cpu::Conv2dShape{int(batch), int(cin), int(h), int(w), int(ch), k, k, stride, k / 2});
    h = stem->shape().P();
    w = stem->shape().Q();
    layers_.push_back(std::move(stem));
    layers_.push_back(std::make_unique<BatchNorm2d>(arena_, "bn1", batch, ch, h, w));
    layers_.push_back(std::make_unique<Activation>(arena_, ActivationKind::kRelu, std::vector<std::int64_t>{batch, ch, h, w}));
    if (imagenet) {
      auto pool = std::make_unique<MaxPool2d>(arena_, batch, ch, h, w, 3, 2, 1);
      h = pool->outH();
      w = pool->outW();
      layers_.push_back(std::move(pool));
    }
    for (std::size_t s = 0; s < c.widths.size(); ++s)
      for (std::int64_t b = 0; b < c.blocks[s]; ++b) {
        const int blockStride = (s > 0 && b == 0) ? 2 : 1;
        auto block = std::make_unique<BasicBlock>(arena_, init, "layer" + std::to_string(s + 1) + "." + std::to_string(b), batch,
                                                  ch, h, w, c.widths[s], blockStride, tp.rank, tp.ranks);
        h = block->outH();
        w = block->outW();
        ch = c.widths[s];
        layers_.push_back(std::move(block));
      }
    layers_.push_back(std::make_unique<GlobalAvgPool>(arena_, batch, ch, h, w));
    layers_.push_back(std::make_unique<Linear>(arena_, init, "fc", batch, ch, c.classes));
    finish();
  }
};

}  // namespace

std::unique_ptr<Model> makeCnn(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp) {
  return std::make_unique<Cnn>(config, batch, device, tp);
}

}  // namespace ts::wl

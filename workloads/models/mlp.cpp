// MLP: `depth` hidden Linear layers of `width` with ReLU or GELU, then a Linear head to the classes.
// Parameters: in*w + w + (depth-1)(w*w + w) + w*classes + classes. Forward FLOPs: 2 B (in w + (depth-1) w^2
// + w classes).
#include "workloads/layers/activation.h"
#include "workloads/layers/linear.h"
#include "workloads/models/sequential_classifier.h"

namespace ts::wl {
namespace {

class Mlp final : public SequentialClassifier {
 public:
  Mlp(const ModelConfig& c, std::int64_t batch, Device& device) : SequentialClassifier(c, batch, device) {
    const Init init(c.seed);
    std::int64_t in = 1;
    for (auto d : c.inputShape) in *= d;
    const ActivationKind act = parseActivation(c.activation);
    for (std::int64_t i = 0; i < c.depth; ++i) {
      layers_.push_back(std::make_unique<Linear>(arena_, init, "layers." + std::to_string(2 * i), batch, in, c.width));
      layers_.push_back(std::make_unique<Activation>(arena_, act, std::vector<std::int64_t>{batch, c.width}));
      in = c.width;
    }
    layers_.push_back(std::make_unique<Linear>(arena_, init, "layers." + std::to_string(2 * c.depth), batch, in, c.classes));
    finish();
  }
};

}  // namespace

std::unique_ptr<Model> makeMlp(const ModelConfig& config, std::int64_t batch, Device& device) { return std::make_unique<Mlp>(config, batch, device); }

}  // namespace ts::wl

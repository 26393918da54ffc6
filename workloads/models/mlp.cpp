// MLP: `depth` hidden Linear layers of `width` with ReLU or GELU (each followed by dropout with --dropout),
// then a Linear head to the classes.
// Tensor parallel: the Linear layers in pairs, column- then row-parallel (the activation between them
// works on the column layer's slice); a layer left without a partner (the head after an odd number) is
// replicated.
// Parameters: in*w + w + (depth-1)(w*w + w) + w*classes + classes. Forward FLOPs: 2 B (in w + (depth-1) w^2
// + w classes).
// --recompute full: each hidden layer (Linear, activation, dropout) is one recomputed unit (recompute.h).
#include "workloads/layers/activation.h"
#include "workloads/layers/dropout.h"
#include "workloads/layers/linear.h"
#include "workloads/models/sequential_classifier.h"

namespace ts::wl {
namespace {

class Mlp final : public SequentialClassifier {
 public:
  Mlp(const ModelConfig& c, std::int64_t batch, Device& device, TensorParallel tp) : SequentialClassifier(c, batch, device) {
    const Init init(c.seed);
    std::int64_t in = 1;
    for (auto d : c.inputShape) in *= d;
    const ActivationKind act = c.activation;
    const std::int64_t linears = c.depth + 1;
    auto splitOf = [&](std::int64_t i) {  // i-th Linear: column, row, column, row, ..., the unpaired last one whole
      if (tp.ranks == 1 || (i == linears - 1 && i % 2 == 0)) return TensorSplit{};
      return i % 2 == 0 ? tp.column() : tp.row();
    };
    for (std::int64_t i = 0; i < c.depth; ++i) {
      const TensorSplit split = splitOf(i);
      const std::int64_t held = split.kind == TensorSplit::kColumn ? c.width / tp.ranks : c.width;
      // A hidden layer: its Linear, activation and dropout (each built just before it is added: a pipeline's cut
      // may fall between them, and what is built takes the buffers of the stage it is in, Model::add).
      auto linear = [&] {
        return std::make_unique<Linear>(arena_, init, "layers." + std::to_string(2 * i),
                                        LinearConfig{.rows = batch, .in = in, .out = c.width, .split = split});
      };
      auto activation = [&] { return std::make_unique<Activation>(arena_, act, std::vector<std::int64_t>{batch, held}); };
      auto dropout = [&] {  // on this rank's features: a column slice's start at rank * held
        return std::make_unique<Dropout>(
            arena_, "layers." + std::to_string(2 * i + 1) + ".dropout",
            DropoutConfig{
                .seed = c.seed, .p = c.dropout, .rows = batch, .cols = held, .colOffset = held == c.width ? 0 : tp.rank * held});
      };
      if (c.recompute == Recompute::kFull) {
        const std::int64_t inHeld = split.split() && split.kind == TensorSplit::kRow ? in / tp.ranks : in;
        addRecomputedUnit(
            {.index = static_cast<std::size_t>(i), .inShape = {batch, inHeld}, .outShape = {batch, held}, .dataInput = i == 0},
            [&] {
              std::vector<std::unique_ptr<Layer>> hidden;
              hidden.push_back(linear());
              hidden.push_back(activation());
              if (c.dropout > 0) hidden.push_back(dropout());
              return hidden;
            });
      } else {
        add(linear());
        add(activation());
        if (c.dropout > 0) add(dropout());
      }
      in = c.width;
    }
    add(std::make_unique<Linear>(arena_, init, "layers." + std::to_string(2 * c.depth),
                                 LinearConfig{.rows = batch, .in = in, .out = c.classes, .split = splitOf(c.depth)}));
    finish();
  }
};

}  // namespace

std::unique_ptr<Model> makeMlp(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp) {
  return std::make_unique<Mlp>(config, batch, device, tp);
}

}  // namespace ts::wl

#include "workloads/layers/layer.h"

#include "workloads/layers/param_init.h"

namespace ts::wl {

std::uint64_t nameHash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void addSplitSums(const TensorSplit& split, bool inputGradient, std::size_t outputs, std::size_t inputs, LayerSums& out) {
  if (!split.split()) return;
  if (split.kind == TensorSplit::kRow) out.forward.push_back({SumGroup::kTensorParallel, outputs});
  if (split.kind == TensorSplit::kColumn && inputGradient) out.backward.push_back({SumGroup::kTensorParallel, inputs});
}

void addSumsOf(const std::vector<const Layer*>& forwardOrder, LayerSums& out) {
  std::vector<LayerSums> each(forwardOrder.size());
  for (std::size_t i = 0; i < forwardOrder.size(); ++i) {
    forwardOrder[i]->groupSums(each[i]);
    out.forward.insert(out.forward.end(), each[i].forward.begin(), each[i].forward.end());
  }
  for (std::size_t i = each.size(); i-- > 0;)
    out.backward.insert(out.backward.end(), each[i].backward.begin(), each[i].backward.end());
}

std::vector<std::int64_t> imageShape(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, ConvLayout layout) {
  return layout == ConvLayout::kNhwc ? std::vector<std::int64_t>{n, h, w, c} : std::vector<std::int64_t>{n, c, h, w};
}

void Init::constant(const Tensor& t, float value) const { t.fromHost(std::vector<float>(t.numel(), value)); }

Param makeParam(Arena& arena, std::string name, std::vector<std::int64_t> shape, bool decay, ParamInit init, TensorSlice slice) {
  Param p;
  p.name = std::move(name);
  p.value = Tensor{nullptr, shape, &arena.device()};
  p.grad = Tensor{nullptr, std::move(shape), &arena.device()};
  p.decay = decay;
  p.init = init;
  p.slice = std::move(slice);
  if (!arena.defersParameters()) materialize(p, arena);
  return p;
}

}  // namespace ts::wl

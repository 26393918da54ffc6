#pragma once
// Elementwise activations: ReLU and GELU (tanh approximation). One read and one write per element.
#include "base/enum_names.h"
#include "workloads/layers/layer.h"

namespace ts::wl {

enum class ActivationKind { kRelu, kGelu };

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::ActivationKind> {
  static constexpr std::pair<std::string_view, wl::ActivationKind> kNames[] = {{"relu", wl::ActivationKind::kRelu},
                                                                               {"gelu", wl::ActivationKind::kGelu}};
};
}  // namespace ts

namespace ts::wl {

class Activation final : public Layer {
 public:
  Activation(Arena& arena, ActivationKind kind, std::vector<std::int64_t> shape);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;

 private:
  ActivationKind kind_;
  const Tensor* x_ = nullptr;
  Tensor y_, dx_;
};

}  // namespace ts::wl

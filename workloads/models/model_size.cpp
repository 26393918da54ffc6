// A model's size from its configuration alone, before any of it is allocated: the parameter counts of the
// formulas written beside each model (mlp.cpp, cnn.cpp, transformer.cpp), in 64 bits with every product checked,
// and the refusal of a model the host cannot hold. Without it, `--set layers=2147483648` built layer after layer
// (tens of GB of host memory) before anything failed.
#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/units.h"
#include "workloads/models/model.h"

namespace ts::wl {
namespace {

// An unsigned count whose every sum and product is checked: once past 2^64 it stays "too large". A negative field
// (refused by validateModelConfig, which may run later) counts as 0.
class Count {
 public:
  Count(std::int64_t v = 0) : v_(v < 0 ? 0 : static_cast<std::uint64_t>(v)) {}  // NOLINT(google-explicit-constructor)
  friend Count operator+(Count a, Count b) {
    std::uint64_t r = 0;
    return raw(!a.ok() || !b.ok() || __builtin_add_overflow(a.v_, b.v_, &r) ? kOver : r);
  }
  friend Count operator*(Count a, Count b) {
    std::uint64_t r = 0;
    return raw(!a.ok() || !b.ok() || __builtin_mul_overflow(a.v_, b.v_, &r) ? kOver : r);
  }
  bool ok() const { return v_ != kOver; }
  std::uint64_t value() const { return v_; }

 private:
  static constexpr std::uint64_t kOver = UINT64_MAX;
  static Count raw(std::uint64_t v) {
    Count c;
    c.v_ = v;
    return c;
  }
  std::uint64_t v_;
};

Count product(const std::vector<std::int64_t>& dims) {
  Count n = 1;
  for (std::int64_t d : dims) n = n * d;
  return n;
}

// In:  in*w + w + (depth-1)(w*w + w) + w*classes + classes; no hidden layer: in*classes + classes.
Count mlpParameters(const ModelConfig& c) {
  const Count in = product(c.inputShape), w = c.width, classes = c.classes;
  if (c.depth == 0) return in * classes + classes;
  return in * w + w + Count(c.depth - 1) * (w * w + w) + w * classes + classes;
}

// The stem's k x k convolution (no bias) and batch norm; each basic block's two 3x3 convolutions and batch norms, and a
// 1x1 convolution and batch norm on the shortcut where the block changes the width or the resolution; the head.
Count cnnParameters(const ModelConfig& c) {
  const Count k = c.stem == CnnStem::kImagenet ? 7 : 3;
  std::int64_t channels = c.widths.empty() ? 0 : c.widths[0];
  Count n = Count(c.inputShape.empty() ? 0 : c.inputShape[0]) * channels * k * k + Count(2) * channels;
  for (std::size_t s = 0; s < c.widths.size() && s < c.blocks.size(); ++s)
    for (std::int64_t b = 0; b < c.blocks[s]; ++b) {
      const Count in = channels, out = c.widths[s];
      n = n + in * out * 9 + Count(2) * out + out * out * 9 + Count(2) * out;
      if ((s > 0 && b == 0) || channels != c.widths[s]) n = n + in * out + Count(2) * out;
      channels = c.widths[s];
    }
  return n + Count(channels) * c.classes + c.classes;
}

// A transformer's experts: L E' (8 C^2 + 5 C), E' the experts the config's rank holds (E / ep); none in another model.
Count expertParameters(const ModelConfig& c) {
  if (c.kind != ModelKind::kTransformer || !c.moe.enabled()) return 0;
  const Count C = c.hidden;
  const std::int64_t held = c.moe.experts / std::max(1, c.moe.ep.ranks);
  return Count(c.layers) * held * (Count(8) * C * C + Count(5) * C);
}

// V C + T C + L (12 C^2 + 13 C) + 2 C + C V; with E experts a block's MLP (8 C^2 + 5 C) is E of them and the
// router's E C: L (4 C^2 + 8 C + E C), and the experts the config's rank holds (expertParameters).
Count transformerParameters(const ModelConfig& c) {
  const Count C = c.hidden, V = c.vocab, T = c.seqLen;
  const Count block =
      c.moe.enabled() ? Count(4) * C * C + Count(8) * C + Count(c.moe.experts) * C : Count(12) * C * C + Count(13) * C;
  return V * C + T * C + Count(c.layers) * block + expertParameters(c) + Count(2) * C + C * V;
}

std::string describe(const ModelConfig& c) {
  switch (c.kind) {
    case ModelKind::kMlp:
      return fmt::format("mlp (depth {}, width {})", c.depth, c.width);
    case ModelKind::kCnn:
      return fmt::format("cnn (widths {}, blocks {})", fmt::join(c.widths, ","), fmt::join(c.blocks, ","));
    case ModelKind::kTransformer:
      return fmt::format("transformer (layers {}, hidden {}, seq_len {}, vocab {})", c.layers, c.hidden, c.seqLen, c.vocab);
  }
  return std::string(nameOf(c.kind));
}

}  // namespace

std::optional<std::uint64_t> modelParameterCount(const ModelConfig& c) {
  Count n;
  switch (c.kind) {
    case ModelKind::kMlp:
      n = mlpParameters(c);
      break;
    case ModelKind::kCnn:
      n = cnnParameters(c);
      break;
    case ModelKind::kTransformer:
      n = transformerParameters(c);
      break;
  }
  if (!n.ok()) return std::nullopt;
  return n.value();
}

std::optional<std::uint64_t> modelExpertParameterCount(const ModelConfig& c) {
  const Count n = expertParameters(c);
  if (!n.ok()) return std::nullopt;
  return n.value();
}

void checkModelFits(const ModelConfig& c, std::uint64_t availableBytes, std::string_view whose, const ModelShare& share) {
  if (availableBytes == 0) return;
  const std::optional<std::uint64_t> parameters = modelParameterCount(c);
  // A parameter's value and its gradient, float32 each, are allocated as the model is built; a rank holds at least
  // its share of each, the dense weights' and the experts' each by its own shards.
  std::uint64_t bytes = 0;
  const bool counted = parameters && !__builtin_mul_overflow(*parameters, std::uint64_t{4}, &bytes);
  const std::uint64_t experts = counted ? 4 * modelExpertParameterCount(c).value_or(0) : 0;  // a part of the whole
  const auto part = [](std::uint64_t b, std::uint64_t shards) { return (b + shards - 1) / std::max<std::uint64_t>(1, shards); };
  const auto held = [&](std::uint64_t shards, std::uint64_t expertShards) {
    return part(bytes - experts, shards) + part(experts, expertShards);
  };
  const std::uint64_t need =
      counted ? held(share.valueShards, share.expertValueShards) + held(share.gradientShards, share.expertGradientShards) : 0;
  if (counted && need <= availableBytes) return;
  const std::string count =
      parameters ? fmt::format("{:.3g} parameters", static_cast<double>(*parameters)) : std::string("more than 2^64 parameters");
  const std::string needText = counted      ? formatBytes(need)
                               : parameters ? fmt::format("{:.3g} TiB", static_cast<double>(*parameters) * 8 / 1099511627776.0)
                                            : std::string("more than 2^67 bytes");
  throw UsageError(fmt::format("the {} has {}: {} for them and their gradients alone{}, more than {} ({})", describe(c), count,
                               needText, share.by.empty() ? "" : fmt::format(" (a rank's share under {})", share.by), whose,
                               formatBytes(availableBytes)));
}

}  // namespace ts::wl

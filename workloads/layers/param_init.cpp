#include "workloads/layers/param_init.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {
namespace {

// 53 random bits as a double in (0, 1): the same numbers from every standard library.
double unit(std::mt19937_64& g) { return (static_cast<double>(g() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

// The one-device tensor's stream, read at increasing elements (an element before the last one read restarts
// it). Uniform: element i is draw i. Normal: elements 2k and 2k+1 are the cosine and sine of Box-Muller pair
// k (draws 2k and 2k+1), so an odd first element still takes its pair's first draw.
class InitStream {
 public:
  InitStream(const ParamInit& init, const std::string& name) : init_(init), seed_(init.seed ^ nameHash(name)), g_(seed_) {}

  float at(std::uint64_t i) {
    switch (init_.kind) {
      case InitKind::kZeros:
        return 0.0f;
      case InitKind::kConstant:
        return static_cast<float>(init_.scale);
      case InitKind::kUniform:
        seek(i);
        ++drawn_;
        return static_cast<float>((2 * unit(g_) - 1) * init_.scale);
      case InitKind::kNormal: {
        const std::uint64_t pair = i / 2;
        if (pair != pair_) {
          seek(2 * pair);
          r_ = std::sqrt(-2.0 * std::log(unit(g_)));
          a_ = 6.283185307179586 * unit(g_);
          drawn_ += 2;
          pair_ = pair;
        }
        return static_cast<float>(i % 2 ? init_.scale * r_ * std::sin(a_) : init_.scale * r_ * std::cos(a_));
      }
    }
    throw Error("internal: an initialisation of no kind");
  }

 private:
  void seek(std::uint64_t draw) {
    if (draw < drawn_) {
      g_.seed(seed_);
      drawn_ = 0;
    }
    g_.discard(draw - drawn_);
    drawn_ = draw;
  }
  ParamInit init_;
  std::uint64_t seed_;
  std::mt19937_64 g_;
  std::uint64_t drawn_ = 0;                 // draws taken from g_
  std::uint64_t pair_ = ~std::uint64_t{0};  // the Box-Muller pair r_, a_ hold
  double r_ = 0, a_ = 0;
};

// Where p's element i lies in the one-device tensor: its own place unless p is a slice.
std::uint64_t oneDeviceIndex(const TensorSlice& s, std::uint64_t i) {
  if (!s.sliced()) return i;
  const auto cols = static_cast<std::uint64_t>(s.colTo - s.colFrom);
  const std::uint64_t localRow = i / cols;
  const auto row = s.rows.empty() ? static_cast<std::int64_t>(localRow) : s.rows.at(localRow);
  return static_cast<std::uint64_t>(row * s.fullCols + s.colFrom) + i % cols;
}

void fill(const Param& p, InitStream& stream, std::size_t from, float* out, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) out[k] = stream.at(oneDeviceIndex(p.slice, from + k));
}

void checkRange(const Param& p, std::size_t from, std::size_t n) {
  if (from + n > p.value.numel())
    throw Error(fmt::format("internal: elements [{}, {}) of {} {}", from, from + n, p.name, p.value.shapeText()));
}

}  // namespace

std::vector<float> initialValues(const Param& p, std::size_t from, std::size_t n) {
  checkRange(p, from, n);
  InitStream stream(p.init, p.name);
  std::vector<float> out(n);
  fill(p, stream, from, out.data(), n);
  return out;
}

void drawInitialValues(const Param& p, std::size_t from, const Tensor& dst) {
  const std::size_t n = dst.numel();
  checkRange(p, from, n);
  if (p.init.kind == InitKind::kZeros) {
    dst.device->zero(dst.data, n * sizeof(float));
    return;
  }
  InitStream stream(p.init, p.name);
  std::vector<float> block(std::min(n, kInitBlock));
  for (std::size_t done = 0; done < n; done += block.size()) {
    const std::size_t k = std::min(block.size(), n - done);
    fill(p, stream, from + done, block.data(), k);
    dst.device->upload(dst.data + done, block.data(), k * sizeof(float));
  }
}

void materialize(Param& p, Arena& arena, ParamParts parts) {
  if (parts == ParamParts::kNone) return;
  if (!p.value.data) {
    p.value = arena.tensor(p.value.shape, MemoryKind::kParameters);
    drawInitialValues(p, 0, p.value);
  }
  if (parts == ParamParts::kValuesAndGradients && !p.grad.data) p.grad = arena.tensor(p.grad.shape, MemoryKind::kGradients);
}

void materialize(const std::vector<Param*>& params, Arena& arena, ParamParts parts) {
  for (Param* p : params) materialize(*p, arena, parts);
}

}  // namespace ts::wl

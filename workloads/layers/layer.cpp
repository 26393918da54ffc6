#include "workloads/layers/layer.h"

#include <cmath>
#include <random>

namespace ts::wl {

std::uint64_t nameHash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

namespace {

// 53 random bits as a double in (0, 1): the same numbers from every standard library.
double unit(std::mt19937_64& g) { return (static_cast<double>(g() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

}  // namespace

std::vector<std::int64_t> imageShape(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, ConvLayout layout) {
  return layout == ConvLayout::kNhwc ? std::vector<std::int64_t>{n, h, w, c} : std::vector<std::int64_t>{n, c, h, w};
}

// Values are drawn on the host and uploaded, so every device starts from the same weights.
std::vector<float> Init::drawNormal(const std::string& name, double stddev, std::size_t n) const {
  std::mt19937_64 g(seed_ ^ nameHash(name));
  std::vector<float> v(n);
  for (std::size_t i = 0; i < v.size(); i += 2) {  // Box-Muller, two values per draw
    const double r = std::sqrt(-2.0 * std::log(unit(g))), a = 6.283185307179586 * unit(g);
    v[i] = static_cast<float>(stddev * r * std::cos(a));
    if (i + 1 < v.size()) v[i + 1] = static_cast<float>(stddev * r * std::sin(a));
  }
  return v;
}

std::vector<float> Init::drawUniform(const std::string& name, double bound, std::size_t n) const {
  std::mt19937_64 g(seed_ ^ nameHash(name));
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>((2 * unit(g) - 1) * bound);
  return v;
}

void Init::normal(const Tensor& t, const std::string& name, double stddev) const {
  t.fromHost(drawNormal(name, stddev, t.numel()));
}
void Init::uniform(const Tensor& t, const std::string& name, double bound) const {
  t.fromHost(drawUniform(name, bound, t.numel()));
}

namespace {
std::vector<float> sliced(const std::vector<float>& full, const TensorSlice& s) {
  std::vector<std::int64_t> rows = s.rows;
  if (rows.empty())
    for (std::int64_t r = 0; r < s.fullRows; ++r) rows.push_back(r);
  std::vector<float> out;
  for (std::int64_t r : rows)
    for (std::int64_t c = s.colFrom; c < s.colTo; ++c) out.push_back(full[static_cast<std::size_t>(r * s.fullCols + c)]);
  return out;
}
}  // namespace

void Init::normal(const Tensor& t, const std::string& name, double stddev, const TensorSlice& s) const {
  t.fromHost(sliced(drawNormal(name, stddev, static_cast<std::size_t>(s.fullRows * s.fullCols)), s));
}

void Init::uniform(const Tensor& t, const std::string& name, double bound, const TensorSlice& s) const {
  t.fromHost(sliced(drawUniform(name, bound, static_cast<std::size_t>(s.fullRows * s.fullCols)), s));
}

void Init::constant(const Tensor& t, float value) const { t.fromHost(std::vector<float>(t.numel(), value)); }

Param makeParam(Arena& arena, std::string name, std::vector<std::int64_t> shape, bool decay) {
  Param p;
  p.name = std::move(name);
  p.value = arena.tensor(shape, MemoryKind::kParameters);
  p.grad = arena.tensor(std::move(shape), MemoryKind::kGradients);
  p.decay = decay;
  return p;
}

}  // namespace ts::wl

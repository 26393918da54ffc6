#include "workloads/layers/layer.h"

#include <cmath>
#include <random>

namespace ts::wl {
namespace {

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// 53 random bits as a double in (0, 1): the same numbers from every standard library.
double unit(std::mt19937_64& g) { return (static_cast<double>(g() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

}  // namespace

// Values are drawn on the host and uploaded, so every device starts from the same weights.
void Init::normal(const Tensor& t, const std::string& name, double stddev) const {
  std::mt19937_64 g(seed_ ^ fnv1a(name));
  std::vector<float> v(t.numel());
  for (std::size_t i = 0; i < v.size(); i += 2) {  // Box-Muller, two values per draw
    const double r = std::sqrt(-2.0 * std::log(unit(g))), a = 6.283185307179586 * unit(g);
    v[i] = static_cast<float>(stddev * r * std::cos(a));
    if (i + 1 < v.size()) v[i + 1] = static_cast<float>(stddev * r * std::sin(a));
  }
  t.fromHost(v);
}

void Init::uniform(const Tensor& t, const std::string& name, double bound) const {
  std::mt19937_64 g(seed_ ^ fnv1a(name));
  std::vector<float> v(t.numel());
  for (auto& x : v) x = static_cast<float>((2 * unit(g) - 1) * bound);
  t.fromHost(v);
}

void Init::constant(const Tensor& t, float value) const { t.fromHost(std::vector<float>(t.numel(), value)); }

Param makeParam(Arena& arena, std::string name, std::vector<std::int64_t> shape, bool decay) {
  Param p;
  p.name = std::move(name);
  p.value = arena.tensor(shape);
  p.grad = arena.tensor(std::move(shape));
  p.decay = decay;
  return p;
}

}  // namespace ts::wl

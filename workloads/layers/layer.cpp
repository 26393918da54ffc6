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

void Init::normal(const Tensor& t, const std::string& name, double stddev) const {
  std::mt19937_64 g(seed_ ^ fnv1a(name));
  const std::size_t n = t.numel();
  for (std::size_t i = 0; i < n; i += 2) {  // Box-Muller, two values per draw
    const double r = std::sqrt(-2.0 * std::log(unit(g))), a = 6.283185307179586 * unit(g);
    t.data[i] = static_cast<float>(stddev * r * std::cos(a));
    if (i + 1 < n) t.data[i + 1] = static_cast<float>(stddev * r * std::sin(a));
  }
}

void Init::uniform(const Tensor& t, const std::string& name, double bound) const {
  std::mt19937_64 g(seed_ ^ fnv1a(name));
  for (std::size_t i = 0; i < t.numel(); ++i) t.data[i] = static_cast<float>((2 * unit(g) - 1) * bound);
}

void Init::constant(const Tensor& t, float value) const {
  for (std::size_t i = 0; i < t.numel(); ++i) t.data[i] = value;
}

Param makeParam(Arena& arena, std::string name, std::vector<std::int64_t> shape, bool decay) {
  Param p;
  p.name = std::move(name);
  p.value = arena.tensor(shape);
  p.grad = arena.tensor(std::move(shape));
  p.decay = decay;
  return p;
}

}  // namespace ts::wl

#pragma once
// The largest relative error of float results against float64 references, the unit tests' measure of a CPU op: each
// element's |got - want| / max(1, |want|) (absolute near zero), infinite where a result is NaN. One definition, not
// one per test file: a unity build compiles several test files as one, where two definitions collide.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ts::test {

inline double maxRelErr(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  return worst;
}

}  // namespace ts::test

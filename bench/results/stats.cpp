#include "bench/results/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ts {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

Stats summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile(v, 50);
  s.p95 = percentile(v, 95);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  s.cv = s.mean != 0 ? s.stdev / s.mean : 0;
  return s;
}

nlohmann::json toJson(const Stats& s) {
  return {{"min", s.min}, {"median", s.median}, {"mean", s.mean}, {"p95", s.p95},
          {"max", s.max}, {"stdev", s.stdev},   {"cv", s.cv},     {"n", s.n}};
}

}  // namespace ts

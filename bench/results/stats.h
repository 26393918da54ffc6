#pragma once
// The statistics block every timed figure carries (docs/architecture.md "Measurement rules (as built)": min, median,
// mean, p95, stdev, n, cv).
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

struct Stats {
  double min = 0, median = 0, mean = 0, p95 = 0, max = 0, stdev = 0, cv = 0;
  std::size_t n = 0;
};

// Percentiles interpolate linearly between order statistics (numpy's default); stdev is the sample
// standard deviation (n-1); cv = stdev / mean (0 when the mean is 0). Empty input gives all zeros.
Stats summarize(std::vector<double> samples);
double percentile(const std::vector<double>& sorted, double p);
nlohmann::json toJson(const Stats& s);

}  // namespace ts

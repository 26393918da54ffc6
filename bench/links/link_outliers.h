#pragma once
// The outliers among the pairs of one link type (kind "link_outliers"): the pairs whose figure is more
// than a fraction worse than the median of that test and type. findOutliers decides; toJson writes the
// record and links_table.h the console's lines.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ts {

// One pair's figure in one test: GB/s, or microseconds for a latency test.
struct PairFigure {
  std::string src, dst, srcHost, dstHost;
  double value = 0;
};

struct LinkOutliersRecord {
  std::string test, linkType;
  std::size_t pairs = 0;  // of that test and type
  double median = 0, fraction = 0;
  bool latency = false;  // lower is better, in us; else higher is better, in GB/s
  std::vector<PairFigure> outliers;
};

// The pairs of `group` (one test, one link type) more than `fraction` worse than its median.
LinkOutliersRecord findOutliers(const std::string& test, const std::string& linkType, const std::vector<PairFigure>& group,
                                double fraction, bool latency);
nlohmann::json toJson(const LinkOutliersRecord& r);

}  // namespace ts

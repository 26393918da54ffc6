#include "bench/links/link_outliers.h"

#include "bench/results/stats.h"

namespace ts {

LinkOutliersRecord findOutliers(const std::string& test, const std::string& linkType, const std::vector<PairFigure>& group,
                                double fraction, bool latency) {
  std::vector<double> values;
  for (const PairFigure& p : group) values.push_back(p.value);
  LinkOutliersRecord r{test, linkType, group.size(), summarize(values).median, fraction, latency, {}};
  for (const PairFigure& p : group) {
    const bool bad = latency ? p.value > (1 + fraction) * r.median : p.value < (1 - fraction) * r.median;
    if (bad) r.outliers.push_back(p);
  }
  return r;
}

nlohmann::json toJson(const LinkOutliersRecord& r) {
  nlohmann::json list = nlohmann::json::array();
  for (const PairFigure& p : r.outliers)
    list.push_back({{"src", p.src}, {"dst", p.dst}, {"src_host", p.srcHost}, {"dst_host", p.dstHost}, {"value", p.value}});
  return {{"kind", "link_outliers"}, {"test", r.test},         {"link_type", r.linkType},           {"pairs", r.pairs},
          {"median", r.median},      {"fraction", r.fraction}, {"unit", r.latency ? "us" : "GB/s"}, {"outliers", list}};
}

}  // namespace ts

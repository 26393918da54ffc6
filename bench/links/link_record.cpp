#include "bench/links/link_record.h"

#include "bench/session/stats.h"

namespace ts {

std::optional<double> bandwidthOf(const LinkMeasurement& m) {
  if (m.latency) return std::nullopt;
  const Stats s = summarize(m.samplesUs);
  return s.median > 0 ? std::optional<double>(static_cast<double>(m.bytes) / (s.median * 1e-6) / 1e9) : std::nullopt;
}

nlohmann::json toRecord(const LinkMeasurement& m, const std::string& label) {
  const Stats s = summarize(m.samplesUs);
  const auto bw = bandwidthOf(m);
  nlohmann::json r = {{"kind", "link"},
                      {"test", m.test},
                      {"src", m.src},
                      {"dst", m.dst},
                      {"engine", m.engine},
                      {"direction", m.direction},
                      {"bytes", m.bytes},
                      {"time_us", toJson(s)},
                      {"samples_us", m.samplesUs},
                      {"bandwidth_gbps", bw ? nlohmann::json(*bw) : nlohmann::json(nullptr)},
                      {"latency_us", m.latency ? toJson(s) : nlohmann::json(nullptr)},
                      {"link", toJson(m.link, bw)},
                      {"check", {{"performed", true}, {"passed", m.wrong == 0}, {"wrong", m.wrong}}}};
  for (const auto& [k, v] : m.extra.items()) r[k] = v;
  if (!label.empty()) r["label"] = label;
  return r;
}

}  // namespace ts

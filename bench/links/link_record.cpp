#include "bench/links/link_record.h"

#include "bench/results/record_json.h"
#include "bench/results/stats.h"

namespace ts {
namespace {

void putFields(nlohmann::json&, const std::monostate&) {}  // a GPU test: its fields are in extra

void putFields(nlohmann::json& r, const HostMemoryFields& f) {
  r["host"] = f.host;
  r["processes"] = f.processes;
  r["threads_per_process"] = f.threadsPerProcess;
  r["array_bytes"] = f.arrayBytes;
}

void putFields(nlohmann::json& r, const MpiPairFields& f) {
  r["src_host"] = f.srcHost;
  r["dst_host"] = f.dstHost;
  r["message_bytes"] = f.messageBytes;
  r["window"] = f.window;
  r["warmup"] = f.warmup;
  r["iterations"] = f.iterations;
  if (f.deliveredBytes) r["delivered_bytes"] = *f.deliveredBytes;
}

}  // namespace

std::optional<double> bandwidthOf(const LinkMeasurement& m) {
  if (m.latency) return std::nullopt;
  if (m.totalUs)
    return *m.totalUs > 0 ? std::optional<double>(static_cast<double>(m.bytes) * static_cast<double>(m.samplesUs.size()) /
                                                  (*m.totalUs * 1e-6) / 1e9)
                          : std::nullopt;
  const Stats s = summarize(m.samplesUs);
  return s.median > 0 ? std::optional<double>(static_cast<double>(m.bytes) / (s.median * 1e-6) / 1e9) : std::nullopt;
}

double figureOf(const LinkMeasurement& m) { return m.latency ? summarize(m.samplesUs).median : bandwidthOf(m).value_or(0); }

nlohmann::json toJson(const LinkMeasurement& m) {
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
                      {"bandwidth_gbps", orNull(bw)},
                      {"latency_us", m.latency ? toJson(s) : nlohmann::json(nullptr)},
                      {"link", toJson(m.link, bw)},
                      {"check", {{"performed", true}, {"passed", m.wrong == 0}, {"wrong", m.wrong}}}};
  if (m.totalUs) r["total_us"] = *m.totalUs;
  r["ceiling_suspect"] = m.suspect.has_value();
  if (m.suspect) r["ceiling_suspect_cause"] = std::string(suspectCauseName(*m.suspect));
  std::visit([&](const auto& f) { putFields(r, f); }, m.fields);
  for (const auto& [k, v] : m.extra.items()) r[k] = v;
  putUnlessEmpty(r, "label", m.label);
  putUnlessEmpty(r, "step", m.step);
  return r;
}

}  // namespace ts

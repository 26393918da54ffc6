#include "bench/links/link_peaks.h"

#include <fmt/format.h>

namespace ts {

namespace {
// The datasheet's rows (reports/schema/link-datasheet.json, generated into link_datasheet.inc).
struct NvlinkGeneration {
  int major, minor;
  const char* name;
  double perLink;
  int links;  // per GPU
};
struct PcieGeneration {
  int generation;
  double gtPerS, encoding;  // transfers per second and lane, and the encoding's payload fraction
};
struct DeviceMemory {
  const char* match;  // the first row whose text the GPU's name contains
  double gbps;        // both directions together, as a copy uses it: read + write
};
// Each table takes its own rows of the generated file; the others' expand to nothing.
#define TS_NVLINK(major, minor, name, perLink, links) NvlinkGeneration{major, minor, name, perLink, links},
#define TS_PCIE(...)
#define TS_DEVICE_MEMORY(...)
constexpr NvlinkGeneration kNvlink[] = {
#include "bench/links/link_datasheet.inc"
};
#undef TS_NVLINK
#undef TS_PCIE
#define TS_NVLINK(...)
#define TS_PCIE(generation, rate, encoding) PcieGeneration{generation, rate, encoding},
constexpr PcieGeneration kPcie[] = {
#include "bench/links/link_datasheet.inc"
};
#undef TS_PCIE
#undef TS_DEVICE_MEMORY
#define TS_PCIE(...)
#define TS_DEVICE_MEMORY(match, gbps) DeviceMemory{match, gbps},
constexpr DeviceMemory kDeviceMemory[] = {
#include "bench/links/link_datasheet.inc"
};
#undef TS_NVLINK
#undef TS_PCIE
#undef TS_DEVICE_MEMORY
}  // namespace

std::optional<double> nvlinkPerLinkGbps(int major, int minor, std::string* generation) {
  for (const auto& g : kNvlink) {
    if (g.major == major && g.minor == minor) {
      if (generation) *generation = g.name;
      return g.perLink;
    }
  }
  return std::nullopt;
}

std::optional<double> pcieGbps(int generation, int width) {
  if (width < 1) return std::nullopt;
  for (const auto& g : kPcie)
    if (g.generation == generation) return g.gtPerS * g.encoding / 8 * width;  // GT/s are bits per lane
  return std::nullopt;
}

std::optional<double> deviceMemoryGbps(const std::string& name) {
  for (const auto& m : kDeviceMemory)
    if (name.find(m.match) != std::string::npos) return m.gbps;
  return std::nullopt;
}

LinkClass networkLink(const nlohmann::json& host) {
  LinkClass best{"network", "no RDMA port: TCP over the kernel's network", std::nullopt};
  for (const auto& port : host["nics"]["rdma"]) {
    if (port["state"] != "active" || port["rate_gbps"].is_null()) continue;
    const double gbps = port["rate_gbps"].get<double>() / 8.0;
    if (!best.peakGbps || gbps > *best.peakGbps) {
      best.peakGbps = gbps;
      best.detail = fmt::format("{} {} {} Gb/s", port["link_layer"].get<std::string>(), port["device"].get<std::string>(),
                                port["rate_gbps"].get<double>());
    }
  }
  return best;
}

LinkClass gpuPairLink(const std::string& cell, int major, int minor, std::optional<double> pcie) {
  if (cell.rfind("NV", 0) == 0) {
    const int links = std::atoi(cell.c_str() + 2);
    std::string gen = "NVLink";
    const auto per = nvlinkPerLinkGbps(major, minor, &gen);
    return {"nvlink", fmt::format("{} x{}", gen, links), per ? std::optional<double>(*per * links) : std::nullopt};
  }
  if (cell.empty() || cell == "?") return {"pcie", "path unknown", pcie};
  return {"pcie", cell, pcie};
}

nlohmann::json toJson(const LinkClass& link, std::optional<double> measured) {
  nlohmann::json j = {{"type", link.type}, {"detail", link.detail}, {"peak_gbps", nullptr}, {"fraction_of_peak", nullptr}};
  if (link.peakGbps) {
    j["peak_gbps"] = *link.peakGbps;
    if (measured) j["fraction_of_peak"] = *measured / *link.peakGbps;
  }
  return j;
}

}  // namespace ts

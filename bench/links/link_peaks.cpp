#include "bench/links/link_peaks.h"

#include <fmt/format.h>

namespace ts {

std::optional<double> nvlinkPerLinkGbps(int major, int minor, std::string* generation) {
  // NVLink2 (V100, sm_70): 25 GB/s per link per direction; NVLink3 (A100, sm_80): 25; NVLink4 (H100/H200,
  // sm_90): 25 (18 links = 450 GB/s per direction); NVLink5 (B200, sm_100): 50 (18 links = 900).
  struct Gen {
    int major, minor;
    const char* name;
    double perLink;
  };
  static constexpr Gen kGens[] = {
      {7, 0, "NVLink2", 25.0}, {8, 0, "NVLink3", 25.0}, {9, 0, "NVLink4", 25.0}, {10, 0, "NVLink5", 50.0}};
  for (const auto& g : kGens) {
    if (g.major == major && g.minor == minor) {
      if (generation) *generation = g.name;
      return g.perLink;
    }
  }
  return std::nullopt;
}

std::optional<double> pcieGbps(int generation, int width) {
  // Per lane and direction: Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b; Gen3 8, Gen4 16, Gen5 32, Gen6 64 GT/s
  // with 128b/130b (Gen6's FLIT encoding is close enough to it for a peak).
  static constexpr double kLaneGbps[] = {
      0, 0.25, 0.5, 8.0 * 128 / 130 / 8, 16.0 * 128 / 130 / 8, 32.0 * 128 / 130 / 8, 64.0 * 128 / 130 / 8};
  if (generation < 1 || generation > 6 || width < 1) return std::nullopt;
  return kLaneGbps[generation] * width;
}

std::optional<double> deviceMemoryGbps(const std::string& name) {
  // Datasheet memory bandwidth (both directions together, as a copy uses it: read + write).
  struct Model {
    const char* match;
    double gbps;
  };
  static constexpr Model kModels[] = {
      {"GH200", 4000},          {"H200", 4800},           {"H100 NVL", 3900}, {"H100 PCIe", 2000}, {"H100", 3350}, {"B200", 8000},
      {"A100-SXM4-80GB", 2039}, {"A100 80GB PCIe", 1935}, {"A100", 1555},     {"L40S", 864},       {"V100", 900},  {"A10", 600},
  };
  for (const auto& m : kModels)
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

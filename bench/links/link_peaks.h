#pragma once
// What each kind of link should deliver, from the datasheets (reports/schema/link-datasheet.json, declared once for
// the build and the reports): what turns a measured GB/s into a fraction of its peak. All figures are per direction,
// in GB/s (1e9 bytes/s), after encoding.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ts {

struct LinkClass {
  std::string type;    // "nvlink", "pcie", "c2c", "hbm", "dram", "shm", "network", "host"
  std::string detail;  // "NVLink4 x18", "PCIe Gen5 x16", "PXB", "InfiniBand NDR 400 Gb/s", ...
  std::optional<double> peakGbps;
};

// NVLink bandwidth per link and direction for a GPU architecture (compute capability major.minor).
std::optional<double> nvlinkPerLinkGbps(int ccMajor, int ccMinor, std::string* generation);
// PCIe per direction for a generation and lane count (128b/130b from Gen3; Gen1/2 use 8b/10b).
std::optional<double> pcieGbps(int generation, int width);
// The HBM (or GDDR) bandwidth of a GPU model from its name, when the model is in the table.
std::optional<double> deviceMemoryGbps(const std::string& gpuName);
// The fastest active RDMA port of a host inventory, as a network link (rate Gb/s / 8).
LinkClass networkLink(const nlohmann::json& hostInventory);
// A GPU pair from the link-matrix cell ("NV18", "PIX", ...) and the GPUs' compute capability.
LinkClass gpuPairLink(const std::string& matrixCell, int ccMajor, int ccMinor, std::optional<double> pcieGbps);

nlohmann::json toJson(const LinkClass& link, std::optional<double> measuredGbps);

}  // namespace ts

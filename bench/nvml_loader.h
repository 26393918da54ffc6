#pragma once
// NVML, loaded at run time (libnvidia-ml.so.1 comes with the driver, not the toolkit): absent NVML is not
// an error, it only means the inventory has no link matrix or live clocks. Only the few entry points
// trainscope uses are declared, with NVML's documented ABI.
#include <string>

namespace ts::nvml {

using Device = struct nvmlDevice_st*;

struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

// Topology levels of nvmlDeviceGetTopologyCommonAncestor, with nvidia-smi's names.
const char* topologyName(int level);

class Library {
 public:
  // Loads and initialises NVML; ok() false (and reason()) when it cannot.
  Library();
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  bool ok() const { return ok_; }
  const std::string& reason() const { return reason_; }

  bool deviceByPciBusId(const std::string& busId, Device* out) const;
  bool pciInfo(Device d, PciInfo* out) const;
  bool commonAncestor(Device a, Device b, int* level) const;
  // Number of active NVLinks from a to the GPU at b's PCI address.
  int nvlinksBetween(Device a, const PciInfo& b) const;
  bool maxClockMhz(Device d, int clockType, unsigned* mhz) const;  // 1 = SM, 2 = memory
  bool currentClockMhz(Device d, int clockType, unsigned* mhz) const;  // the clock now
  bool pcieLink(Device d, unsigned* generation, unsigned* width) const;  // the link's maximum generation and width
  std::string driverVersion() const;

 private:
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string reason_;
};

}  // namespace ts::nvml

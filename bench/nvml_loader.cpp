#include "bench/nvml_loader.h"

#include <dlfcn.h>

namespace ts::nvml {
namespace {
constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS

template <typename Fn>
Fn sym(void* h, const char* name) {
  return h ? reinterpret_cast<Fn>(::dlsym(h, name)) : nullptr;
}
}  // namespace

const char* topologyName(int level) {
  switch (level) {
    case 0: return "X";      // NVML_TOPOLOGY_INTERNAL: the same board
    case 10: return "PIX";   // one PCIe switch
    case 20: return "PXB";   // several PCIe switches
    case 30: return "PHB";   // a PCIe host bridge
    case 40: return "NODE";  // host bridges within a NUMA node
    case 50: return "SYS";   // across NUMA nodes (SMP interconnect)
    default: return "?";
  }
}

Library::Library() {
  handle_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    reason_ = "NVML (libnvidia-ml.so.1) not found";
    return;
  }
  auto init = sym<int (*)()>(handle_, "nvmlInit_v2");
  if (!init || init() != 0) {
    reason_ = "nvmlInit failed";
    return;
  }
  ok_ = true;
}

Library::~Library() {
  if (ok_) {
    if (auto shutdown = sym<int (*)()>(handle_, "nvmlShutdown")) shutdown();
  }
  if (handle_) ::dlclose(handle_);
}

bool Library::deviceByPciBusId(const std::string& busId, Device* out) const {
  auto f = sym<int (*)(const char*, Device*)>(handle_, "nvmlDeviceGetHandleByPciBusId_v2");
  return ok_ && f && f(busId.c_str(), out) == 0;
}

bool Library::pciInfo(Device d, PciInfo* out) const {
  auto f = sym<int (*)(Device, PciInfo*)>(handle_, "nvmlDeviceGetPciInfo_v3");
  return ok_ && f && f(d, out) == 0;
}

bool Library::commonAncestor(Device a, Device b, int* level) const {
  auto f = sym<int (*)(Device, Device, int*)>(handle_, "nvmlDeviceGetTopologyCommonAncestor");
  return ok_ && f && f(a, b, level) == 0;
}

int Library::nvlinksBetween(Device a, const PciInfo& b) const {
  auto state = sym<int (*)(Device, unsigned, int*)>(handle_, "nvmlDeviceGetNvLinkState");
  auto remote = sym<int (*)(Device, unsigned, PciInfo*)>(handle_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  if (!ok_ || !state || !remote) return 0;
  int links = 0;
  for (unsigned l = 0; l < kMaxNvLinks; ++l) {
    int active = 0;
    if (state(a, l, &active) != 0 || !active) continue;
    PciInfo r{};
    if (remote(a, l, &r) != 0) continue;
    if (r.domain == b.domain && r.bus == b.bus && r.device == b.device) ++links;
  }
  return links;
}

bool Library::maxClockMhz(Device d, int clockType, unsigned* mhz) const {
  auto f = sym<int (*)(Device, int, unsigned*)>(handle_, "nvmlDeviceGetMaxClockInfo");
  return ok_ && f && f(d, clockType, mhz) == 0;
}

bool Library::currentClockMhz(Device d, int clockType, unsigned* mhz) const {
  auto f = sym<int (*)(Device, int, unsigned*)>(handle_, "nvmlDeviceGetClockInfo");
  return ok_ && f && f(d, clockType, mhz) == 0;
}

bool Library::pcieLink(Device d, unsigned* generation, unsigned* width) const {
  auto gen = sym<int (*)(Device, unsigned*)>(handle_, "nvmlDeviceGetMaxPcieLinkGeneration");
  auto wid = sym<int (*)(Device, unsigned*)>(handle_, "nvmlDeviceGetMaxPcieLinkWidth");
  return ok_ && gen && wid && gen(d, generation) == 0 && wid(d, width) == 0;
}

std::string Library::driverVersion() const {
  auto f = sym<int (*)(char*, unsigned)>(handle_, "nvmlSystemGetDriverVersion");
  char buf[96] = {};
  if (!ok_ || !f || f(buf, sizeof(buf)) != 0) return "";
  return buf;
}

}  // namespace ts::nvml

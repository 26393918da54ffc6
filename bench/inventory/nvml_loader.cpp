#include "bench/inventory/nvml_loader.h"

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
    case 0:
      return "X";  // NVML_TOPOLOGY_INTERNAL: the same board
    case 10:
      return "PIX";  // one PCIe switch
    case 20:
      return "PXB";  // several PCIe switches
    case 30:
      return "PHB";  // a PCIe host bridge
    case 40:
      return "NODE";  // host bridges within a NUMA node
    case 50:
      return "SYS";  // across NUMA nodes (SMP interconnect)
    default:
      return "?";
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

int Library::nvlinksBetween(Device a, Device b, const PciInfo& bPci) const {
  auto state = sym<int (*)(Device, unsigned, int*)>(handle_, "nvmlDeviceGetNvLinkState");
  auto remote = sym<int (*)(Device, unsigned, PciInfo*)>(handle_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  auto remoteType = sym<int (*)(Device, unsigned, int*)>(handle_, "nvmlDeviceGetNvLinkRemoteDeviceType");
  auto p2p = sym<int (*)(Device, Device, int, int*)>(handle_, "nvmlDeviceGetP2PStatus");
  if (!ok_ || !state || !remote) return 0;
  constexpr int kRemoteSwitch = 2;  // NVML_NVLINK_DEVICE_TYPE_SWITCH
  constexpr int kP2pNvlink = 2;     // NVML_P2P_CAPS_INDEX_NVLINK
  int direct = 0, toSwitches = 0;
  for (unsigned l = 0; l < kMaxNvLinks; ++l) {
    int active = 0;
    if (state(a, l, &active) != 0 || !active) continue;
    int type = -1;
    if (remoteType && remoteType(a, l, &type) == 0 && type == kRemoteSwitch) {
      ++toSwitches;
      continue;
    }
    PciInfo r{};
    if (remote(a, l, &r) != 0) continue;
    if (r.domain == bPci.domain && r.bus == bPci.bus && r.device == bPci.device) ++direct;
  }
  if (direct > 0 || toSwitches == 0 || !p2p) return direct;
  int status = -1;  // NVML_P2P_STATUS_OK is 0
  return p2p(a, b, kP2pNvlink, &status) == 0 && status == 0 ? toSwitches : 0;
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

namespace {
struct Reason {
  unsigned long long bit;
  const char* name;
  bool throttles;
};
// nvmlClocksEventReasons (nvml.h).
constexpr Reason kReasons[] = {{0x1, "gpu_idle", false},
                               {0x2, "applications_clocks_setting", false},
                               {0x4, "sw_power_cap", true},
                               {0x8, "hw_slowdown", true},
                               {0x10, "sync_boost", false},
                               {0x20, "sw_thermal_slowdown", true},
                               {0x40, "hw_thermal_slowdown", true},
                               {0x80, "hw_power_brake_slowdown", true},
                               {0x100, "display_clock_setting", false}};
}  // namespace

std::vector<std::string> clocksEventReasonNames(unsigned long long mask) {
  std::vector<std::string> out;
  unsigned long long known = 0;
  for (const Reason& r : kReasons) {
    known |= r.bit;
    if (mask & r.bit) out.emplace_back(r.name);
  }
  if (mask & ~known) out.push_back("other");
  return out;
}

bool throttling(unsigned long long mask) {
  for (const Reason& r : kReasons)
    if (r.throttles && (mask & r.bit)) return true;
  return false;
}

unsigned Library::deviceCount() const {
  auto f = sym<int (*)(unsigned*)>(handle_, "nvmlDeviceGetCount_v2");
  unsigned n = 0;
  return ok_ && f && f(&n) == 0 ? n : 0;
}

bool Library::deviceByIndex(unsigned index, Device* out) const {
  auto f = sym<int (*)(unsigned, Device*)>(handle_, "nvmlDeviceGetHandleByIndex_v2");
  return ok_ && f && f(index, out) == 0;
}

bool Library::powerMilliwatts(Device d, unsigned* mw) const {
  auto f = sym<int (*)(Device, unsigned*)>(handle_, "nvmlDeviceGetPowerUsage");
  return ok_ && f && f(d, mw) == 0;
}

bool Library::temperatureC(Device d, unsigned* c) const {
  auto f = sym<int (*)(Device, int, unsigned*)>(handle_, "nvmlDeviceGetTemperature");
  return ok_ && f && f(d, 0 /* NVML_TEMPERATURE_GPU */, c) == 0;
}

bool Library::utilizationPercent(Device d, unsigned* gpu, unsigned* memory) const {
  struct Utilization {  // nvmlUtilization_t
    unsigned gpu, memory;
  };
  auto f = sym<int (*)(Device, Utilization*)>(handle_, "nvmlDeviceGetUtilizationRates");
  Utilization u{};
  if (!ok_ || !f || f(d, &u) != 0) return false;
  *gpu = u.gpu;
  *memory = u.memory;
  return true;
}

bool Library::clocksEventReasons(Device d, unsigned long long* mask) const {
  auto f = sym<int (*)(Device, unsigned long long*)>(handle_, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!f)
    f = sym<int (*)(Device, unsigned long long*)>(handle_, "nvmlDeviceGetCurrentClocksThrottleReasons");  // drivers before 535
  return ok_ && f && f(d, mask) == 0;
}

std::optional<unsigned long long> counterValue(const FieldValue& v) {
  using Counter = std::optional<unsigned long long>;
  const auto nonNegative = [](long long x) { return x >= 0 ? Counter(static_cast<unsigned long long>(x)) : std::nullopt; };
  if (v.nvmlReturn != 0) return std::nullopt;
  switch (v.valueType) {
    case 1:
      return v.value.ui;
    case 2:
      return v.value.ul;
    case 3:
      return v.value.ull;
    case 4:
      return nonNegative(v.value.sll);
    case 5:
      return nonNegative(v.value.si);
    case 6:
      return v.value.us;
    default:
      return std::nullopt;  // 0 (double) is no counter
  }
}

bool Library::nvlinkDataKiB(Device d, unsigned long long* tx, unsigned long long* rx) const {
  auto f = sym<int (*)(Device, int, FieldValue*)>(handle_, "nvmlDeviceGetFieldValues");
  if (!ok_ || !f) return false;
  constexpr unsigned kDataTx = 138, kDataRx = 139, kAllLinks = ~0u;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, every link
  FieldValue v[2] = {};
  v[0].fieldId = kDataTx;
  v[1].fieldId = kDataRx;
  v[0].scopeId = v[1].scopeId = kAllLinks;
  if (f(d, 2, v) != 0) return false;
  const auto t = counterValue(v[0]), r = counterValue(v[1]);
  if (!t || !r) return false;
  *tx = *t;
  *rx = *r;
  return true;
}

bool Library::pcieThroughputKBps(Device d, bool receive, unsigned* kbps) const {
  auto f = sym<int (*)(Device, int, unsigned*)>(handle_, "nvmlDeviceGetPcieThroughput");
  return ok_ && f && f(d, receive ? 1 : 0, kbps) == 0;
}

std::string Library::driverVersion() const {
  auto f = sym<int (*)(char*, unsigned)>(handle_, "nvmlSystemGetDriverVersion");
  char buf[96] = {};
  if (!ok_ || !f || f(buf, sizeof(buf)) != 0) return "";
  return buf;
}

}  // namespace ts::nvml

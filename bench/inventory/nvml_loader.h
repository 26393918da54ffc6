#pragma once
// NVML, loaded at run time (libnvidia-ml.so.1 comes with the driver, not the toolkit): absent NVML is not
// an error, it only means the inventory has no link matrix or live clocks. Only the few entry points
// trainscope uses are declared, with NVML's documented ABI.
#include <optional>
#include <string>
#include <vector>

namespace ts::nvml {

using Device = struct nvmlDevice_st*;

struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

// One value read through nvmlDeviceGetFieldValues (nvmlFieldValue_t): which field, and its value typed by
// valueType (nvmlValueType_t: 0 double, 1 unsigned, 2 unsigned long, 3 unsigned long long, 4 long long,
// 5 int, 6 unsigned short).
struct FieldValue {
  unsigned fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  union {
    double d;
    int si;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    unsigned short us;
  } value;
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");
// A field's value as a non-negative counter; nothing when NVML answered it with an error, or with a
// negative or non-integer value.
std::optional<unsigned long long> counterValue(const FieldValue& v);

// Topology levels of nvmlDeviceGetTopologyCommonAncestor, with nvidia-smi's names.
const char* topologyName(int level);

// The names of the reasons set in a clocks-event (throttle) mask, nvidia-smi's words; and whether any of
// them lowers the clocks under load (power cap, thermal, hardware slowdown), as opposed to idle or an
// application clock setting.
std::vector<std::string> clocksEventReasonNames(unsigned long long mask);
bool throttling(unsigned long long mask);

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
  // Number of active NVLinks from a to GPU b (at PCI address bPci), as nvidia-smi topo -m counts them: the
  // links that reach b directly, else (NVSwitch nodes, where every link reaches a switch) a's links to the
  // switches when NVML says b is reachable from a over NVLink.
  int nvlinksBetween(Device a, Device b, const PciInfo& bPci) const;
  bool maxClockMhz(Device d, int clockType, unsigned* mhz) const;        // 1 = SM, 2 = memory
  bool currentClockMhz(Device d, int clockType, unsigned* mhz) const;    // the clock now
  bool pcieLink(Device d, unsigned* generation, unsigned* width) const;  // the link's maximum generation and width
  std::string driverVersion() const;
  // Live state, for telemetry (each false when the driver does not support it).
  unsigned deviceCount() const;
  bool deviceByIndex(unsigned index, Device* out) const;
  bool powerMilliwatts(Device d, unsigned* mw) const;
  bool temperatureC(Device d, unsigned* c) const;
  bool utilizationPercent(Device d, unsigned* gpu, unsigned* memory) const;
  bool clocksEventReasons(Device d, unsigned long long* mask) const;      // why the clocks are below their maximum
  bool pcieThroughputKBps(Device d, bool receive, unsigned* kbps) const;  // over the last 20 ms
  // NVLink data (payload) sent and received over all links since the driver loaded, in KiB; false on a
  // GPU without NVLink or a driver without the counters (before R450).
  bool nvlinkDataKiB(Device d, unsigned long long* tx, unsigned long long* rx) const;

 private:
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string reason_;
};

}  // namespace ts::nvml

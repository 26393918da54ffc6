// NVML's entry points, as the node of fake_node.h answers them: the ones bench/inventory/nvml_loader.cpp looks
// up, and the few more a GPU check reads (name, UUID, memory, compute mode, compute capability, P2P status).
// The library's SONAME is libnvidia-ml.so.1, so that a dlopen("libnvidia-ml.so.1") in a process that preloads
// it returns it (the dynamic loader matches the names of loaded objects first): no other setting is needed.
// The types are NVML's documented ABI (nvml.h is not part of the toolkit); NVML sees every GPU of the node,
// whatever CUDA_VISIBLE_DEVICES says, as the real one does.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "fake_node.h"

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6,
                       kInsufficientSize = 7, kDriverNotLoaded = 9;

struct nvmlDevice_st {
  int index;
};
using nvmlDevice_t = nvmlDevice_st*;

struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};

struct Utilization {  // nvmlUtilization_t
  unsigned gpu, memory;
};

struct FieldValue {  // nvmlFieldValue_t
  unsigned fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  unsigned long long value;  // a union of 8 bytes in NVML
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");

nvmlDevice_st g_devices[fakegpu::kMaxGpus] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
std::atomic<int> g_initialised{0};  // nvmlInit and nvmlShutdown count, as NVML's do (telemetry's thread calls too)
thread_local std::string t_whyNot;  // why nvmlInit failed, for nvmlErrorString

// Clock types (nvmlClockType_t) and the idle node's current clocks.
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2;
constexpr unsigned kIdleSmMhz = 345;
// nvmlDeviceGetFieldValues: NVLink data sent and received (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX).
constexpr unsigned kFieldNvlinkDataTx = 138, kFieldNvlinkDataRx = 139;
constexpr int kValueUnsignedLongLong = 3;
constexpr int kP2pStatusOk = 0, kP2pStatusNotSupported = 5;
constexpr int kTopologyInternal = 0, kTopologyNode = 40, kTopologySystem = 50;
constexpr int kNvLinkDeviceSwitch = 2;

// The node, when NVML is initialised.
nvmlReturn_t ready(fakegpu::Node& n) {
  if (g_initialised == 0) return kUninitialized;
  n = fakegpu::currentNode();
  return n.error.empty() ? kSuccess : kDriverNotLoaded;
}

// The node, when NVML is initialised and `d` is one of its GPUs.
nvmlReturn_t check(nvmlDevice_t d, fakegpu::Node& n) {
  if (const nvmlReturn_t r = ready(n)) return r;
  return d >= g_devices && d < g_devices + n.count ? kSuccess : kInvalidArgument;
}

nvmlReturn_t copyText(const std::string& text, char* out, unsigned length) {
  if (!out || text.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}

void fillPci(PciInfo& p, unsigned bus, unsigned deviceId) {
  std::memset(&p, 0, sizeof(p));
  p.bus = bus;
  p.pciDeviceId = deviceId;
  std::snprintf(p.busIdLegacy, sizeof(p.busIdLegacy), "0000:%02X:00.0", bus);
  std::snprintf(p.busId, sizeof(p.busId), "00000000:%02X:00.0", bus);
}

bool nvlinkUp(const fakegpu::Node& n) { return n.count > 1; }  // a lone GPU's links reach no peer: down

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2() {
  const fakegpu::Node n = fakegpu::currentNode();
  if (!n.error.empty()) {
    t_whyNot = "fake GPU: " + n.error;
    return kDriverNotLoaded;
  }
  ++g_initialised;
  return kSuccess;
}

nvmlReturn_t nvmlInit() { return nvmlInit_v2(); }
nvmlReturn_t nvmlInitWithFlags(unsigned) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown() {
  if (g_initialised == 0) return kUninitialized;
  --g_initialised;
  return kSuccess;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case kNotFound:
      return "Not Found";
    case kInsufficientSize:
      return "Insufficient Size";
    case kDriverNotLoaded:
      return t_whyNot.empty() ? "Driver Not Loaded" : t_whyNot.c_str();
    default:
      return "Unknown Error";
  }
}

// The 580 driver series is CUDA 13.0's.
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = ready(n)) return r;
  return copyText("580.65.06", version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 13000;
  return kSuccess;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) { return nvmlSystemGetCudaDriverVersion_v2(version); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = ready(n)) return r;
  *count = static_cast<unsigned>(n.count);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned* count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = ready(n)) return r;
  if (index >= static_cast<unsigned>(n.count)) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

// "domain:bus:device.function" with a 4- or 8-digit domain, or "bus:device.function"; any case.
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = ready(n)) return r;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) != 4) {
    domain = 0;
    if (std::sscanf(pciBusId, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3) return kInvalidArgument;
  }
  for (int i = 0; i < n.count; ++i)
    if (domain == 0 && dev == 0 && fn == 0 && bus == fakegpu::gpuBus(i)) {
      *device = &g_devices[i];
      return kSuccess;
    }
  return kNotFound;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned* index) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *index = static_cast<unsigned>(d->index);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned* minor) { return nvmlDeviceGetIndex(d, minor); }

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned length) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  return copyText(n.model->name, name, length);
}

// The same UUID the fake CUDA runtime gives (cudaDeviceProp::uuid), in NVML's text form.
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned length) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  unsigned char b[16];
  for (int i = 0; i < 16; ++i) b[i] = static_cast<unsigned char>(n.model->uuidTag + i);
  b[15] = static_cast<unsigned char>(n.model->uuidTag + d->index);
  char text[48];
  std::snprintf(text, sizeof(text), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return copyText(text, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, PciInfo* pci) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  fillPci(*pci, fakegpu::gpuBus(d->index), n.model->pciDeviceId);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, Memory* memory) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  memory->total = n.model->memoryBytes;
  memory->used = 0;
  memory->free = memory->total;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int* major, int* minor) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *major = 9;
  *minor = 0;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, int* mode) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *mode = 0;  // NVML_COMPUTEMODE_DEFAULT: several processes may share a GPU
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int* mode) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *mode = 1;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (type == kClockGraphics || type == kClockSm) {
    *mhz = static_cast<unsigned>(n.model->smClockMhz);
    return kSuccess;
  }
  if (type == kClockMem) {
    *mhz = static_cast<unsigned>(n.model->memClockMhz);
    return kSuccess;
  }
  return kNotSupported;
}

// An idle GPU: the SM clock down, the memory clock (which does not change under load) at its maximum.
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (type == kClockGraphics || type == kClockSm) {
    *mhz = kIdleSmMhz;
    return kSuccess;
  }
  return nvmlDeviceGetMaxClockInfo(d, type, mhz);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* reasons) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *reasons = 0x1;  // nvmlClocksEventReasonGpuIdle
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(d, reasons);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, Utilization* u) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  u->gpu = u->memory = 0;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* milliwatts) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *milliwatts = 72000;  // an idle SXM board
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned* milliwatts) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *milliwatts = 700000;  // the SXM boards' TDP
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned* milliwatts) {
  return nvmlDeviceGetEnforcedPowerLimit(d, milliwatts);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* celsius) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (sensor != 0) return kInvalidArgument;  // NVML_TEMPERATURE_GPU is the only sensor
  *celsius = 33;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int, unsigned* kbps) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *kbps = 0;
  return kSuccess;
}

// PCIe Gen5 x16, at the maximum and now.
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned* generation) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *generation = 5;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned* width) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  *width = 16;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned* generation) {
  return nvmlDeviceGetMaxPcieLinkGeneration(d, generation);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned* width) { return nvmlDeviceGetMaxPcieLinkWidth(d, width); }

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, FieldValue* values) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  for (int i = 0; i < count; ++i) {
    FieldValue& v = values[i];
    const bool nvlinkData = v.fieldId == kFieldNvlinkDataTx || v.fieldId == kFieldNvlinkDataRx;
    v.nvmlReturn = nvlinkData && nvlinkUp(n) ? kSuccess : kNotSupported;
    v.valueType = kValueUnsignedLongLong;
    v.value = 0;
  }
  return kSuccess;
}

// NVLink4: 18 links per GPU, each to one of the four NVSwitches (never to a GPU directly), up when the node
// has GPUs to reach.
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* isActive) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (link >= static_cast<unsigned>(fakegpu::kNvLinksPerGpu)) return kInvalidArgument;
  *isActive = nvlinkUp(n);
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned* version) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (link >= static_cast<unsigned>(fakegpu::kNvLinksPerGpu)) return kInvalidArgument;
  *version = 4;
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, PciInfo* pci) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (link >= static_cast<unsigned>(fakegpu::kNvLinksPerGpu)) return kInvalidArgument;
  if (!nvlinkUp(n)) return kNotSupported;
  fillPci(*pci, fakegpu::switchBus(fakegpu::switchOfLink(static_cast<int>(link))), 0x22a310de);  // an NVSwitch
  return kSuccess;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned link, int* type) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(d, n)) return r;
  if (link >= static_cast<unsigned>(fakegpu::kNvLinksPerGpu)) return kInvalidArgument;
  if (!nvlinkUp(n)) return kNotSupported;
  *type = kNvLinkDeviceSwitch;
  return kSuccess;
}

// Every pair of the node reaches the other through the NVSwitches (NVLink, reads, writes, atomics alike).
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int, int* status) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(a, n)) return r;
  if (const nvmlReturn_t r = check(b, n)) return r;
  *status = a != b && nvlinkUp(n) ? kP2pStatusOk : kP2pStatusNotSupported;
  return kSuccess;
}

// The PCIe path between two GPUs: within a CPU socket through its host bridges (NODE), else across (SYS).
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int* level) {
  fakegpu::Node n;
  if (const nvmlReturn_t r = check(a, n)) return r;
  if (const nvmlReturn_t r = check(b, n)) return r;
  if (a == b)
    *level = kTopologyInternal;
  else
    *level = fakegpu::socketOf(a->index) == fakegpu::socketOf(b->index) ? kTopologyNode : kTopologySystem;
  return kSuccess;
}

}  // extern "C"

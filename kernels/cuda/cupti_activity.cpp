#include "kernels/cuda/cupti_activity.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <cuda_runtime_api.h>
#include <cupti.h>

#include "base/error.h"

#define CUPTI_CHECK(call)                                                   \
  do {                                                                      \
    const CUptiResult ts_cupti_rc_ = (call);                                \
    if (ts_cupti_rc_ != CUPTI_SUCCESS) {                                    \
      const char* ts_cupti_text_ = "unknown CUPTI error";                   \
      cuptiGetResultString(ts_cupti_rc_, &ts_cupti_text_);                  \
      throw ::ts::Error(std::string(#call) + " failed: " + ts_cupti_text_); \
    }                                                                       \
  } while (0)

namespace ts::cuda {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;

// What the CUPTI callbacks (on CUPTI's own thread) collect, raw timestamps in device-clock nanoseconds.
struct Collected {
  std::mutex mutex;
  std::vector<DeviceSpan> spans;
  std::atomic<std::uint64_t> dropped{0};
};
Collected& collected() {
  static Collected c;
  return c;
}

std::string demangled(const char* name) {
  if (!name) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

const char* copyKindName(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "Memcpy PtoP";
    default:
      return "Memcpy";
  }
}

// The fields every device record has: when, where, and which launch it came from.
template <typename Record>
void placed(DeviceSpan& s, const Record* r) {
  s.startUs = static_cast<double>(r->start);
  s.endUs = static_cast<double>(r->end);
  s.device = r->deviceId;
  s.stream = r->streamId;
  s.correlation = r->correlationId;
}

// A copy: its direction, where and when, and its size (host/device and peer-to-peer records alike).
template <typename Record>
void copied(DeviceSpan& s, const Record* m) {
  s.kind = DeviceSpan::Kind::kMemcpy;
  s.name = copyKindName(m->copyKind);
  placed(s, m);
  s.bytes = m->bytes;
}

// A driver call that can put work on the device (NCCL launches its kernels with cuLaunchKernelEx).
bool launchesWork(std::string_view name) {
  for (std::string_view p : {"cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch"})
    if (name.starts_with(p)) return true;
  return false;
}

void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* maxRecords) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *maxRecords = 0;  // as many as fit
}

void CUPTIAPI bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t* buffer, std::size_t,
                              std::size_t validBytes) {
  std::vector<DeviceSpan> got;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validBytes, &record) == CUPTI_SUCCESS) {
    DeviceSpan s;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        s.kind = DeviceSpan::Kind::kKernel;
        s.name = demangled(k->name);
        placed(s, k);
        s.grid[0] = k->gridX, s.grid[1] = k->gridY, s.grid[2] = k->gridZ;
        s.block[0] = k->blockX, s.block[1] = k->blockY, s.block[2] = k->blockZ;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        copied(s, reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        copied(s, reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
        break;  // peer to peer
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        s.kind = DeviceSpan::Kind::kMemset;
        s.name = "Memset";  // Kineto's prefixes: Holistic Trace Analysis sorts memory work by them
        placed(s, m);
        s.bytes = m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        const char* name = nullptr;
        const CUpti_CallbackDomain domain = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
        if (cuptiGetCallbackName(domain, a->cbid, &name) != CUPTI_SUCCESS || !name)
          name = runtime ? "cuda runtime call" : "cuda driver call";
        if (!runtime && !launchesWork(name)) continue;  // the driver's other calls: never kept (see finish)
        s.kind = runtime ? DeviceSpan::Kind::kRuntimeApi : DeviceSpan::Kind::kDriverApi;
        s.name = name;
        s.startUs = static_cast<double>(a->start);
        s.endUs = static_cast<double>(a->end);
        s.correlation = a->correlationId;
        s.thread = a->threadId;
        break;
      }
      default:
        continue;
    }
    got.push_back(std::move(s));
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, streamId, &dropped) == CUPTI_SUCCESS) collected().dropped += dropped;
  std::free(buffer);
  std::lock_guard lock(collected().mutex);
  for (auto& s : got) collected().spans.push_back(std::move(s));
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMCPY2 /* peer to peer */,
                                         CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER};

void disableAll() {  // best effort, on the way out: nothing to report a failure to
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
}

bool isApi(const DeviceSpan& s) { return s.kind == DeviceSpan::Kind::kRuntimeApi || s.kind == DeviceSpan::Kind::kDriverApi; }

double steadyUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ActivityTrace::ActivityTrace() {
  {
    std::lock_guard lock(collected().mutex);
    collected().spans.clear();
    collected().dropped = 0;
  }
  try {
    CUPTI_CHECK(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
    for (CUpti_ActivityKind k : kKinds) CUPTI_CHECK(cuptiActivityEnable(k));
    // steady = device_ns / 1000 + offset: keep the reading whose two steady-clock brackets are closest.
    double best = 1e300;
    for (int i = 0; i < 32; ++i) {
      std::uint64_t ns = 0;
      const double before = steadyUs();
      CUPTI_CHECK(cuptiGetTimestamp(&ns));
      const double after = steadyUs();
      if (after - before < best) {
        best = after - before;
        offsetUs_ = (before + after) / 2 - static_cast<double>(ns) / 1e3;
        uncertaintyUs_ = (after - before) / 2;
        offsetMeasuredAtUs_ = (before + after) / 2;
      }
    }
  } catch (...) {  // leave nothing half enabled: no destructor runs for a constructor that threw
    disableAll();
    throw;
  }
  running_ = true;
}

double ActivityTrace::clockErrorUs(double atUs) const {
  return uncertaintyUs_ + kMaxDriftPpm * 1e-6 * std::fabs(atUs - offsetMeasuredAtUs_) + kTimestampTickUs;
}

ActivityTrace::~ActivityTrace() {
  if (!running_) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disableAll();
}

std::vector<DeviceSpan> ActivityTrace::finish() {
  if (!running_) return {};
  // Work still in flight would come back as records without an end: wait for the device, but only when
  // this process used CUDA while recording (some record came back), so that a CPU run on a GPU host makes
  // no context. A failed device (a sticky error) cannot be waited for; its complete records still count.
  CUPTI_CHECK(cuptiActivityFlushAll(0));
  bool used = false;
  {
    std::lock_guard lock(collected().mutex);
    used = !collected().spans.empty();
  }
  if (used && cudaDeviceSynchronize() != cudaSuccess) static_cast<void>(cudaGetLastError());
  CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  for (CUpti_ActivityKind k : kKinds) CUPTI_CHECK(cuptiActivityDisable(k));
  running_ = false;
  std::vector<DeviceSpan> out;
  {
    std::lock_guard lock(collected().mutex);
    out.swap(collected().spans);
  }
  // Incomplete records out; driver calls only where they launched device work no runtime call did; each
  // piece of device work named with the call that launched it.
  std::unordered_set<std::uint32_t> work, byRuntime;
  for (const DeviceSpan& s : out) {
    if (!isApi(s)) work.insert(s.correlation);
    if (s.kind == DeviceSpan::Kind::kRuntimeApi) byRuntime.insert(s.correlation);
  }
  std::erase_if(out, [&](const DeviceSpan& s) {
    if (!isApi(s) && (s.startUs <= 0 || s.endUs < s.startUs)) {
      ++incomplete_;
      return true;
    }
    return s.kind == DeviceSpan::Kind::kDriverApi && (!work.contains(s.correlation) || byRuntime.contains(s.correlation));
  });
  std::unordered_map<std::uint32_t, const std::string*> launches;
  for (const DeviceSpan& s : out)
    if (isApi(s)) launches.emplace(s.correlation, &s.name);
  for (DeviceSpan& s : out) {
    if (isApi(s)) continue;
    if (const auto it = launches.find(s.correlation); it != launches.end()) s.launch = *it->second;
  }
  for (DeviceSpan& s : out) {  // device-clock nanoseconds to steady-clock microseconds
    s.startUs = s.startUs / 1e3 + offsetUs_;
    s.endUs = s.endUs / 1e3 + offsetUs_;
  }
  std::sort(out.begin(), out.end(), [](const DeviceSpan& a, const DeviceSpan& b) { return a.startUs < b.startUs; });
  return out;
}

std::uint64_t ActivityTrace::droppedRecords() const { return collected().dropped.load(); }

}  // namespace ts::cuda

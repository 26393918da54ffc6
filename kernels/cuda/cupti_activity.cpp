#include "kernels/cuda/cupti_activity.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

#include <cupti.h>

#include "base/error.h"

#define CUPTI_CHECK(call)                                                                  \
  do {                                                                                     \
    const CUptiResult ts_cupti_rc_ = (call);                                               \
    if (ts_cupti_rc_ != CUPTI_SUCCESS) {                                                   \
      const char* ts_cupti_text_ = "unknown CUPTI error";                                  \
      cuptiGetResultString(ts_cupti_rc_, &ts_cupti_text_);                                 \
      throw ::ts::Error(std::string(#call) + " failed: " + ts_cupti_text_);                \
    }                                                                                      \
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
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    default: return "memcpy";
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

void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* maxRecords) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *maxRecords = 0;  // as many as fit
}

void CUPTIAPI bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t* buffer, std::size_t, std::size_t validBytes) {
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
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        s.kind = DeviceSpan::Kind::kMemcpy;
        s.name = copyKindName(m->copyKind);
        placed(s, m);
        s.bytes = m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        s.kind = DeviceSpan::Kind::kMemset;
        s.name = "memset";
        placed(s, m);
        s.bytes = m->bytes;
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const char* name = nullptr;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS || !name) name = "cuda runtime call";
        s.kind = DeviceSpan::Kind::kRuntimeApi;
        s.name = name;
        s.startUs = static_cast<double>(a->start);
        s.endUs = static_cast<double>(a->end);
        s.correlation = a->correlationId;
        break;
      }
      default: continue;
    }
    got.push_back(std::move(s));
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, streamId, &dropped) == CUPTI_SUCCESS) collected().dropped += dropped;
  std::free(buffer);
  std::lock_guard lock(collected().mutex);
  for (auto& s : got) collected().spans.push_back(std::move(s));
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_RUNTIME};

double steadyUs() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

ActivityTrace::ActivityTrace() {
  {
    std::lock_guard lock(collected().mutex);
    collected().spans.clear();
    collected().dropped = 0;
  }
  CUPTI_CHECK(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
  for (CUpti_ActivityKind k : kKinds) CUPTI_CHECK(cuptiActivityEnable(k));
  running_ = true;
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
    }
  }
}

ActivityTrace::~ActivityTrace() {
  if (!running_) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
}

std::vector<DeviceSpan> ActivityTrace::finish() {
  if (!running_) return {};
  CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  for (CUpti_ActivityKind k : kKinds) CUPTI_CHECK(cuptiActivityDisable(k));
  running_ = false;
  std::vector<DeviceSpan> out;
  {
    std::lock_guard lock(collected().mutex);
    out.swap(collected().spans);
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

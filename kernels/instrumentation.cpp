#include "kernels/instrumentation.h"

#ifdef TRAINSCOPE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace ts::nvtx {

#ifdef TRAINSCOPE_HAVE_NVTX
namespace {

struct Domain {
  nvtxDomainHandle_t handle;
  Domain() : handle(nvtxDomainCreateA("trainscope")) {
    nvtxDomainNameCategoryA(handle, static_cast<std::uint32_t>(Category::kCompute), "compute");
    nvtxDomainNameCategoryA(handle, static_cast<std::uint32_t>(Category::kCommunication), "communication");
    nvtxDomainNameCategoryA(handle, static_cast<std::uint32_t>(Category::kData), "data");
    nvtxDomainNameCategoryA(handle, static_cast<std::uint32_t>(Category::kOptimizer), "optimizer");
    nvtxDomainNameCategoryA(handle, static_cast<std::uint32_t>(Category::kStep), "step");
    nvtxDomainNameCategoryA(handle, static_cast<std::uint32_t>(Category::kMeasurement), "measurement");
  }
};

nvtxDomainHandle_t domain() {
  static const Domain d;  // created on first use, once
  return d.handle;
}

nvtxEventAttributes_t attributes(const char* message, Category category, std::int64_t payload) {
  static constexpr std::uint32_t kColors[] = {0xff888888u, 0xff2e7d32u, 0xff1565c0u, 0xfff9a825u,
                                              0xff6a1b9au, 0xff546e7au, 0xffc62828u};
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<std::uint32_t>(category);
  a.colorType = NVTX_COLOR_ARGB;
  a.color = kColors[static_cast<std::uint32_t>(category) % 7];
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  if (payload >= 0) {
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = payload;
  }
  return a;
}

}  // namespace

bool available() { return true; }

void push(const char* message, Category category, std::int64_t payload) {
  const nvtxEventAttributes_t a = attributes(message, category, payload);
  nvtxDomainRangePushEx(domain(), &a);
}

void pop() { nvtxDomainRangePop(domain()); }

std::uint64_t start(const char* message, Category category) {
  const nvtxEventAttributes_t a = attributes(message, category, -1);
  return nvtxDomainRangeStartEx(domain(), &a);
}

void end(std::uint64_t id) { nvtxDomainRangeEnd(domain(), id); }

#else
bool available() { return false; }
void push(const char*, Category, std::int64_t) {}
void pop() {}
std::uint64_t start(const char*, Category) { return 0; }
void end(std::uint64_t) {}
#endif

}  // namespace ts::nvtx

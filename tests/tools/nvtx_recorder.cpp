// An NVTX injection library for the tests: load it with NVTX_INJECTION64_PATH and every range trainscope
// opens in its "trainscope" domain is written, one line per call, to $TS_NVTX_LOG.<pid>:
//   domain <name> | category <id> <name> | push <category> <payload|-> <message> | pop
//   start <id> <category> <message> | end <id>
// (what Nsight Systems would receive through the same callbacks; NVTX's documented injection interface).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <nvtx3/nvToolsExt.h>

namespace {

std::mutex g_mutex;
std::FILE* g_log = nullptr;
std::atomic<unsigned long long> g_nextRange{1};
int g_domainTag = 0;  // the handle handed out for every domain

template <typename... A>
void line(const char* format, A... args) {
  std::lock_guard lock(g_mutex);
  if (!g_log) return;
  std::fprintf(g_log, format, args...);
  std::fputc('\n', g_log);
  std::fflush(g_log);
}

const char* message(const nvtxEventAttributes_t* a) {
  return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii ? a->message.ascii : "?";
}

nvtxDomainHandle_t NVTX_API domainCreate(const char* name) {
  line("domain %s", name);
  return reinterpret_cast<nvtxDomainHandle_t>(&g_domainTag);
}

void NVTX_API nameCategory(nvtxDomainHandle_t, uint32_t category, const char* name) { line("category %u %s", category, name); }

int NVTX_API push(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  if (a && a->payloadType == NVTX_PAYLOAD_TYPE_INT64)
    line("push %u %lld %s", a->category, static_cast<long long>(a->payload.llValue), message(a));
  else
    line("push %u - %s", a ? a->category : 0u, message(a));
  return 0;
}

int NVTX_API pop(nvtxDomainHandle_t) {
  line("pop");
  return 0;
}

nvtxRangeId_t NVTX_API start(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  const unsigned long long id = g_nextRange++;
  line("start %llu %u %s", id, a ? a->category : 0u, message(a));
  return id;
}

void NVTX_API end(nvtxDomainHandle_t, nvtxRangeId_t id) { line("end %llu", static_cast<unsigned long long>(id)); }

}  // namespace

extern "C" NVTX_DYNAMIC_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable) {
  const char* path = std::getenv("TS_NVTX_LOG");
  if (!path) return 0;
  g_log = std::fopen((std::string(path) + "." + std::to_string(::getpid())).c_str(), "w");
  if (!g_log) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) ||
      size <= NVTX_CBID_CORE2_DomainCreateA)
    return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&domainCreate);
  *table[NVTX_CBID_CORE2_DomainNameCategoryA] = reinterpret_cast<NvtxFunctionPointer>(&nameCategory);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  *table[NVTX_CBID_CORE2_DomainRangeStartEx] = reinterpret_cast<NvtxFunctionPointer>(&start);
  *table[NVTX_CBID_CORE2_DomainRangeEnd] = reinterpret_cast<NvtxFunctionPointer>(&end);
  return 1;
}

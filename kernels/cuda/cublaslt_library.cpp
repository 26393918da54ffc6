// The cuBLASLt entry points trainscope calls, each forwarding to the library loaded on first use
// (cublaslt_library.h says why). A function of <cublasLt.h> that trainscope starts calling is one more line of
// TS_CUBLASLT_ENTRY_POINTS; one that is missing fails to link, naming it.
#include "kernels/cuda/cublaslt_library.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ts::cuda {
namespace {

// X(return type, name, parameters, arguments, value when the library cannot be loaded)
#define TS_CUBLASLT_ENTRY_POINTS(X)                                                                                             \
  X(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * handle), (handle), CUBLAS_STATUS_NOT_INITIALIZED)                       \
  X(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t handle), (handle), CUBLAS_STATUS_NOT_INITIALIZED)                        \
  X(size_t, cublasLtGetVersion, (void), (), 0)                                                                                  \
  X(cublasStatus_t, cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale), \
    (desc, compute, scale), CUBLAS_STATUS_NOT_INITIALIZED)                                                                      \
  X(cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc), CUBLAS_STATUS_NOT_INITIALIZED)              \
  X(cublasStatus_t, cublasLtMatmulDescSetAttribute,                                                                             \
    (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t bytes), (desc, attr, buf, bytes),  \
    CUBLAS_STATUS_NOT_INITIALIZED)                                                                                              \
  X(cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref), CUBLAS_STATUS_NOT_INITIALIZED) \
  X(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref), CUBLAS_STATUS_NOT_INITIALIZED)  \
  X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                                                                       \
    (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t bytes),                \
    (pref, attr, buf, bytes), CUBLAS_STATUS_NOT_INITIALIZED)                                                                    \
  X(cublasStatus_t, cublasLtMatrixLayoutCreate,                                                                                 \
    (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),                             \
    (layout, type, rows, cols, ld), CUBLAS_STATUS_NOT_INITIALIZED)                                                              \
  X(cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout), CUBLAS_STATUS_NOT_INITIALIZED)      \
  X(cublasStatus_t, cublasLtMatrixLayoutSetAttribute,                                                                           \
    (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t bytes),                       \
    (layout, attr, buf, bytes), CUBLAS_STATUS_NOT_INITIALIZED)                                                                  \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                                                                             \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,                    \
     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,                        \
     cublasLtMatmulHeuristicResult_t results[], int* returned),                                                                 \
    (handle, desc, a, b, c, d, pref, requested, results, returned), CUBLAS_STATUS_NOT_INITIALIZED)                              \
  X(cublasStatus_t, cublasLtMatmul,                                                                                             \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A, cublasLtMatrixLayout_t a,            \
     const void* B, cublasLtMatrixLayout_t b, const void* beta, const void* C, cublasLtMatrixLayout_t c, void* D,               \
     cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceBytes, cudaStream_t stream),  \
    (handle, desc, alpha, A, a, B, b, beta, C, c, D, d, algo, workspace, workspaceBytes, stream), CUBLAS_STATUS_NOT_INITIALIZED)

// The library, once: its handle stays open for the process's life (cuBLASLt keeps state behind its handles).
struct Library {
#define TS_CUBLASLT_POINTER(ret, name, params, args, absent) decltype(&::name) name = nullptr;
  TS_CUBLASLT_ENTRY_POINTS(TS_CUBLASLT_POINTER)
#undef TS_CUBLASLT_POINTER
  decltype(&::cublasLtGetStatusString) statusString = nullptr;
  std::string why;  // empty once loaded
};

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string file = cublasLtFileName();
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = ::dlerror();
      lib.why = fmt::format("cannot load cuBLASLt ({}): {}", file, err ? err : "dlopen failed");
      return;
    }
    std::vector<std::string_view> missing;
#define TS_CUBLASLT_LOOKUP(ret, name, params, args, absent)               \
  lib.name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name)); \
  if (!lib.name) missing.push_back(#name);
    TS_CUBLASLT_ENTRY_POINTS(TS_CUBLASLT_LOOKUP)
#undef TS_CUBLASLT_LOOKUP
    lib.statusString = reinterpret_cast<decltype(&::cublasLtGetStatusString)>(::dlsym(handle, "cublasLtGetStatusString"));
    if (!lib.statusString) missing.push_back("cublasLtGetStatusString");
    if (!missing.empty()) lib.why = fmt::format("{} lacks {} (another cuBLAS version?)", file, fmt::join(missing, ", "));
  });
  return lib;
}

}  // namespace

// kernels/CMakeLists.txt states the file's name once, for this and for the scripts (loaded-later.txt); it must be
// the major version of the headers compiled against.
#define TS_CUBLASLT_TEXT(x) #x
#define TS_CUBLASLT_MAJOR_TEXT(x) TS_CUBLASLT_TEXT(x)
static_assert(std::string_view(TS_CUBLASLT_SONAME) == "libcublasLt.so." TS_CUBLASLT_MAJOR_TEXT(CUBLAS_VER_MAJOR),
              "kernels/CMakeLists.txt's TS_CUBLASLT_SONAME is not the SONAME of these cuBLAS headers");

std::string cublasLtFileName() { return TS_CUBLASLT_SONAME; }

bool cublasLtAvailable(std::string* why) {
  const Library& lib = library();
  if (why) *why = lib.why;
  return lib.why.empty();
}

}  // namespace ts::cuda

// The entry points themselves, with <cublasLt.h>'s declarations (a signature that differs from the header's does
// not compile: a C function cannot be overloaded).
#define TS_CUBLASLT_FORWARD(ret, name, params, args, absent) \
  ret CUBLASWINAPI name params {                             \
    const auto& lib = ts::cuda::library();                   \
    return lib.why.empty() ? lib.name args : absent;         \
  }
extern "C" {
TS_CUBLASLT_ENTRY_POINTS(TS_CUBLASLT_FORWARD)

const char* CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
  const auto& lib = ts::cuda::library();
  return lib.why.empty() ? lib.statusString(status) : lib.why.c_str();
}
}
#undef TS_CUBLASLT_FORWARD

// cuBLASLt loaded on first use (kernels/cuda/cublaslt_library.h): every entry point trainscope calls resolves in the
// library the headers name, whose version it reports, and its status strings are the library's own. No GPU needed:
// loading and asking the version touch no device. (That a process which runs no GEMM never loads it, and that a
// library that cannot be loaded is one line, are held in tests/integration/test_lazy_libraries.py.)
#include <cublasLt.h>
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/cublaslt_library.h"

namespace ts {
namespace {

TEST(CublasLtLibrary, EveryEntryPointResolvesInTheLibraryTheHeadersName) {
  std::string why;
  ASSERT_TRUE(cuda::cublasLtAvailable(&why)) << why;
  EXPECT_EQ(why, "");
  EXPECT_EQ(cuda::cublasLtFileName(), "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  EXPECT_EQ(cublasLtGetVersion() / 10000, static_cast<std::size_t>(CUBLAS_VER_MAJOR));
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED), "the requested functionality is not supported");
}

TEST(CublasLtLibrary, AHandleIsMadeAndDestroyedThroughTheForwardedCalls) {
  ASSERT_TRUE(cuda::cublasLtAvailable());
  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);  // host-side: no device needed
  ASSERT_NE(pref, nullptr);
  const std::size_t workspace = 1 << 20;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
}  // namespace ts

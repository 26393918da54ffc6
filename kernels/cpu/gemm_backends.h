#pragma once
// The GEMM epilogue's fused implementation (internal to kernels/cpu): oneDNN's inner product, whose GEMM
// (x64:gemm:jit) applies the bias and GELU post-op to each block of C while the block is in cache. gemm.cpp
// falls back to OpenBLAS and one pass over C where these decline. Issue #20 measured the difference: the pass
// over C after OpenBLAS cost 12-16% of the GEMM (2048x1536x384 on 2 AVX-512 cores), the fused one 1-4%.
#include <string>

namespace ts::cpu::onednn {

// C[m,n] = act(op(A) op(B) + bias), act = GELU (tanh form) when gelu is set, for dense row-major operands
// (lda, ldb and ldc the lengths of their rows), alpha 1 and beta 0, with a bias or GELU or both. False, and
// nothing done, where the build has no oneDNN or the call is not of that form.
bool gemmEpilogue(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc, const float* bias, bool gelu);
// The implementation gemmEpilogue runs for that shape ("oneDNN inner product x64:gemm:jit"), "" where it declines.
std::string gemmEpilogueImplementation(bool ta, bool tb, int m, int n, int k, bool bias, bool gelu);

}  // namespace ts::cpu::onednn

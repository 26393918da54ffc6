// cuBLASLt GEMM. cuBLASLt is column-major; a row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, so the operands are passed swapped with the same transpose flags. In that view the
// row-major C[m,n] is the column-major D[n,m]: the bias of one value per row-major column is one value per
// ROW of D, which is what CUBLASLT_EPILOGUE_BIAS broadcasts (its vector has D's row count, n).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"

#define CUBLAS_CHECK(call)                                                                                 \
  do {                                                                                                     \
    const cublasStatus_t ts_blas_rc_ = (call);                                                             \
    if (ts_blas_rc_ != CUBLAS_STATUS_SUCCESS)                                                              \
      throw ::ts::errorInContext(std::string(#call) + " failed: " + cublasLtGetStatusString(ts_blas_rc_)); \
  } while (0)

namespace ts::cuda {
namespace {

cudaDataType_t cudaType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kBFloat16:
      return CUDA_R_16BF;
    case DType::kFloat16:
      return CUDA_R_16F;
    default:
      throw UsageError(fmt::format("gemm: {} inputs are not supported (float32, bfloat16, float16)", dtypeName(t)));
  }
}

// RAII for the descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// A column-major rows x cols layout with leading dimension ld, `batch` of them `stride` elements apart.
void makeLayout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int rows, int cols, int ld, int batch, std::int64_t stride) {
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
  if (batch > 1) {
    const std::int32_t count = batch;
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
}

// The largest power of two (at most 256) that divides the address, the leading dimension and the batch
// stride in bytes: what an algorithm may assume of the matrix (cuBLASLt's MIN_ALIGNMENT preferences default
// to 256, which odd sizes such as a 37 x 37 batch stride do not meet).
std::uint32_t alignmentOf(const void* p, int ld, std::int64_t stride, int batch, DType t) {
  const std::uint64_t e = dtypeSize(t);
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(p) | (static_cast<std::uint64_t>(ld) * e) | 256u;
  if (batch > 1) bits |= static_cast<std::uint64_t>(stride) * e;
  return static_cast<std::uint32_t>(bits & (~bits + 1));  // the lowest set bit
}

std::string describe(const GemmSpec& s) {
  std::string epi = s.bias ? (s.gelu ? "+bias+gelu" : "+bias") : (s.gelu ? "+gelu" : "");
  return fmt::format("{}{}x{}x{}{} {}{}{}{}", s.batch > 1 ? fmt::format("{} x ", s.batch) : "", s.m, s.n, s.k, epi,
                     dtypeName(s.inputs), s.tf32 && s.inputs == DType::kFloat32 ? " (tf32)" : "",
                     s.output != s.inputs ? fmt::format(" -> {}", dtypeName(s.output)) : "",
                     s.transA || s.transB ? fmt::format(" trans {}{}", s.transA ? "A" : "", s.transB ? "B" : "") : "");
}

constexpr int kGemmCandidates = 8;  // algorithms asked of cuBLASLt's heuristic per call

// Why a GEMM found no algorithm, on one line: the shape, what was offered and refused, the alignments of
// A, B and C (alignmentOf), and for 16-bit inputs the 16 bytes cuBLASLt's tensor-core kernels want.
std::string noAlgorithm(const GemmSpec& s, int offered, int refused, std::uint32_t alignOfA, std::uint32_t alignOfB,
                        std::uint32_t alignOfC) {
  const bool sixteenBit = s.inputs == DType::kBFloat16 || s.inputs == DType::kFloat16;
  return fmt::format(
      "cuBLASLt has no algorithm for a {} GEMM ({} offered, {} refused; alignments A {} B {} C {} bytes, lda {} ldb {} "
      "ldc {}){}",
      describe(s), offered, refused, alignOfA, alignOfB, alignOfC, s.lda, s.ldb, s.ldc,
      sixteenBit ? ": 16-bit inputs want 16-byte-aligned pointers, leading dimensions and batch strides (multiples of "
                   "8 elements) for the tensor-core kernels; pad the shape to that"
                 : "");
}

void validate(const GemmSpec& s) {
  auto bad = [&](const std::string& why) { return UsageError(fmt::format("gemm {}: {}", describe(s), why)); };
  if (s.m < 1 || s.n < 1 || s.k < 1 || s.batch < 1) throw bad("m, n, k and batch must be positive");
  // Row-major row lengths: A is [m,k] (transposed: [k,m]), B is [k,n] ([n,k]), C is [m,n].
  if (s.lda < (s.transA ? s.m : s.k) || s.ldb < (s.transB ? s.k : s.n) || s.ldc < s.n)
    throw bad(fmt::format("a leading dimension is shorter than its row (lda {}, ldb {}, ldc {})", s.lda, s.ldb, s.ldc));
  if (s.batch > 1 && (s.strideA < 0 || s.strideB < 0 || s.strideC < 0)) throw bad("batch strides must not be negative");
  if (s.output != DType::kFloat32 && s.output != s.inputs)
    throw bad(fmt::format("{} output needs {} inputs (the output is float32 or the 16-bit input type)", dtypeName(s.output),
                          dtypeName(s.output)));
}

}  // namespace

Blas::Blas(std::size_t workspaceBytes) : workspace_(workspaceBytes) { CUBLAS_CHECK(cublasLtCreate(&handle_)); }

Blas::~Blas() {
  if (handle_) cublasLtDestroy(handle_);
}

void Blas::gemm(const GemmSpec& s, const void* A, const void* B, void* C, cudaStream_t stream) {
  validate(s);
  const cudaDataType_t in = cudaType(s.inputs), out = cudaType(s.output);
  const cublasComputeType_t compute = (s.inputs == DType::kFloat32 && s.tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  Descriptors d;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F));  // float32 alpha and beta
  // Column-major view: C^T[n,m] = op(B)^T[n,k] op(A)^T[k,m]; B comes first.
  const cublasOperation_t opB = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N, opA = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof(opB)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof(opA)));
  if (s.bias || s.gelu) {
    const cublasLtEpilogue_t epilogue =
        s.bias ? (s.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_GELU;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    // The bias has the output's type (cuBLASLt's default for CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE) and n
    // elements, one per row of the column-major D; with batches, the same vector for each (batch stride 0).
    if (s.bias) CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s.bias, sizeof(s.bias)));
  }
  // Column-major shapes of the stored row-major matrices: B is stored [k,n] (or [n,k]) row-major = [n,k]
  // (or [k,n]) column-major with leading dimension ldb; likewise A; C is [n,m].
  makeLayout(&d.b, in, s.transB ? s.k : s.n, s.transB ? s.n : s.k, s.ldb, s.batch, s.strideB);
  makeLayout(&d.a, in, s.transA ? s.m : s.k, s.transA ? s.k : s.m, s.lda, s.batch, s.strideA);
  makeLayout(&d.c, out, s.n, s.m, s.ldc, s.batch, s.strideC);
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  const std::size_t workspaceBytes = workspace_.bytes();
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
                                                    sizeof(workspaceBytes)));
  // cuBLASLt's A is our B and its B our A (the swap above); C and D are the same matrix.
  const std::uint32_t alignA = alignmentOf(B, s.ldb, s.strideB, s.batch, s.inputs),
                      alignB = alignmentOf(A, s.lda, s.strideA, s.batch, s.inputs),
                      alignC = alignmentOf(C, s.ldc, s.strideC, s.batch, s.output);
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA, sizeof(alignA)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB, sizeof(alignB)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC, sizeof(alignC)));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC, sizeof(alignC)));
  // Several candidates, best first: one the heuristic offers may still refuse this call (NOT_SUPPORTED,
  // or INVALID_VALUE for a workspace it wants beyond ours), and the next one is tried. No candidate at all
  // (the heuristic has none, or answers NOT_SUPPORTED) is one line naming the shape and the alignments.
  std::array<cublasLtMatmulHeuristicResult_t, kGemmCandidates> candidates{};
  int found = 0;
  const cublasStatus_t asked =
      cublasLtMatmulAlgoGetHeuristic(handle_, d.op, d.b, d.a, d.c, d.c, d.pref, kGemmCandidates, candidates.data(), &found);
  if (asked != CUBLAS_STATUS_NOT_SUPPORTED) CUBLAS_CHECK(asked);
  int refused = 0;
  for (int i = 0; asked == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
    const cublasLtMatmulHeuristicResult_t& c = candidates[static_cast<std::size_t>(i)];
    if (c.state != CUBLAS_STATUS_SUCCESS || c.workspaceSize > workspaceBytes) continue;
    const cublasStatus_t ran = cublasLtMatmul(handle_, d.op, &s.alpha, B, d.b, A, d.a, &s.beta, C, d.c, C, d.c, &c.algo,
                                              workspace_.get(), workspaceBytes, stream);
    if (ran == CUBLAS_STATUS_SUCCESS) return;
    if (ran != CUBLAS_STATUS_NOT_SUPPORTED && ran != CUBLAS_STATUS_INVALID_VALUE) CUBLAS_CHECK(ran);
    ++refused;
  }
  throw errorInContext(noAlgorithm(s, std::max(found, 0), refused, alignB, alignA, alignC));  // ours: A is cuBLASLt's B
}

void Blas::gemm(bool transA, bool transB, int m, int n, int k, float alpha, const void* A, int lda, const void* B, int ldb,
                float beta, float* C, int ldc, DType inputs, bool tf32, cudaStream_t stream) {
  GemmSpec s;
  s.transA = transA;
  s.transB = transB;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = lda;
  s.ldb = ldb;
  s.ldc = ldc;
  s.alpha = alpha;
  s.beta = beta;
  s.inputs = inputs;
  s.tf32 = tf32;
  gemm(s, A, B, C, stream);
}

}  // namespace ts::cuda

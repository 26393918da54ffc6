// Causal scaled dot-product attention on the GPU (kernels/cpu/attention.cpp): a fused one-pass kernel (online
// softmax over key tiles) and the unfused two-pass path (cuBLASLt batched GEMMs around the causal softmax
// kernel), see attention.h; and the head permutes of multi-head attention (headsFromRows / rowsFromHeads,
// cuda_ops.h), pure copies.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_common.cuh"

namespace ts::cuda {
namespace {

constexpr int kBr = 64;        // queries per block
constexpr int kBc = 64;        // keys per tile (two per lane in the softmax step)
constexpr int kThreads = 256;  // 16 x 16 threads, each a 4-row micro-tile
constexpr int kRowsPerWarp = kBr / (kThreads / kWarp);
static_assert(kBc == 2 * kWarp && kBr == 64 && kBc == kBr && kThreads == 256, "the thread mapping below assumes these");

// Shared memory of one block: the Q tile, the K tile (then the V tile, in the same place), the scores
// (then the probabilities) of the tile, and per query row the running max, the running sum of
// exponentials and the rescale factor of the current tile. Rows of kD + 1 floats (an odd stride, so a
// walk down a column touches 32 different banks).
template <int kD>
constexpr std::size_t sharedBytes() {
  return sizeof(float) * (std::size_t(kBr) * (kD + 1) + std::size_t(kBc) * (kD + 1) + std::size_t(kBr) * (kBc + 1) + 3 * kBr);
}

// One block per (batch*head, tile of kBr queries); kD is the head dimension rounded up to a multiple of 32
// (the rest is zero padding). For each key tile up to the diagonal: S = scale Q K^T (masked: a key after
// the query, or past T, is -inf), then per row m' = max(m, max S), P = exp(S - m'), l = l e^(m - m') +
// sum P, O = O e^(m - m') + P V; at the end out = O / l. Thread (ty, tx) owns score rows/columns
// ty + 16i, tx + 16j and output rows ty + 16i, dimensions tx + 16j, all in registers. Reads q once and k, v
// once per query tile (L2 serves the repeats); writes out once.
template <int kD>
__global__ void __launch_bounds__(kThreads)
    attentionFusedKernel(float* out, const float* q, const float* k, const float* v, int T, int D, int queryTiles, float scale) {
  static_assert(kD % 32 == 0 && kD <= kAttentionMaxHeadDim, "kD: a multiple of 32 up to the largest head dimension");
  constexpr int kLd = kD + 1, kLdS = kBc + 1, kCols = kD / 16;
  extern __shared__ float smem[];
  float* Qs = smem;                 // [kBr][kLd]
  float* KVs = Qs + kBr * kLd;      // [kBc][kLd]: K, then V
  float* Ss = KVs + kBc * kLd;      // [kBr][kLdS]: scores, then probabilities
  float* rowMax = Ss + kBr * kLdS;  // [kBr]
  float* rowSum = rowMax + kBr;     // [kBr]
  float* rowScale = rowSum + kBr;   // [kBr]

  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int ty = tid / 16, tx = tid % 16;
  const int bh = static_cast<int>(blockIdx.x / queryTiles);
  const int q0 = (queryTiles - 1 - static_cast<int>(blockIdx.x % queryTiles)) * kBr;  // the longest rows first
  const std::size_t base = static_cast<std::size_t>(bh) * T * D;

  // A [rows][kD] tile of x from row `first`, zero past T and past D.
  auto loadTile = [&](float* dst, const float* x, int first) {
    for (int i = tid; i < kBr * kD; i += kThreads) {
      const int r = i / kD, d = i % kD, row = first + r;
      dst[r * kLd + d] = (row < T && d < D) ? x[base + static_cast<std::size_t>(row) * D + d] : 0.0f;
    }
  };
  loadTile(Qs, q, q0);
  if (tid < kBr) {
    rowMax[tid] = -INFINITY;
    rowSum[tid] = 0.0f;
  }

  float acc[4][kCols];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[i][j] = 0.0f;

  const int lastKey = min(q0 + kBr, T) - 1;  // the last key a row of this tile may see
  const int keyTiles = lastKey / kBc + 1;    // the tiles after it are fully masked: skipped
  for (int kt = 0; kt < keyTiles; ++kt) {
    const int k0 = kt * kBc;
    __syncthreads();  // the last tile's V and P are no longer read (the first time: Q and the row state are written)
    loadTile(KVs, k, k0);
    __syncthreads();

    // S = scale Q K^T, causal.
    {
      float s[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = 0.0f;
#pragma unroll 8
      for (int d = 0; d < kD; ++d) {
        float a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = Qs[(ty + 16 * i) * kLd + d];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = KVs[(tx + 16 * j) * kLd + d];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) s[i][j] = fmaf(a[i], b[j], s[i][j]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int r = ty + 16 * i, c = tx + 16 * j, key = k0 + c;
          Ss[r * kLdS + c] = (key <= q0 + r && key < T) ? s[i][j] * scale : -INFINITY;
        }
    }
    __syncthreads();  // S complete, K no longer read

    loadTile(KVs, v, k0);
    // Online softmax: warp w owns rows w*kRowsPerWarp ..., each lane two columns of the tile.
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      float* srow = Ss + r * kLdS;
      const float s0 = srow[lane], s1 = srow[lane + kWarp];
      const float mOld = rowMax[r];
      const float mNew = fmaxf(mOld, warpMax(fmaxf(s0, s1)));  // -inf only while every key so far is masked
      const float p0 = s0 == -INFINITY ? 0.0f : expf(s0 - mNew), p1 = s1 == -INFINITY ? 0.0f : expf(s1 - mNew);
      const float sum = warpSum(p0 + p1);
      srow[lane] = p0;
      srow[lane + kWarp] = p1;
      __syncwarp();
      if (lane == 0) {
        const float corr = mOld == -INFINITY ? 0.0f : expf(mOld - mNew);  // O and l are still 0 while mOld is -inf
        rowMax[r] = mNew;
        rowSum[r] = rowSum[r] * corr + sum;
        rowScale[r] = corr;
      }
    }
    __syncthreads();  // P, V and the rescale factors are ready

    // O = O e^(m - m') + P V.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float corr = rowScale[ty + 16 * i];
#pragma unroll
      for (int j = 0; j < kCols; ++j) acc[i][j] *= corr;
    }
#pragma unroll 4
    for (int c = 0; c < kBc; ++c) {
      float p[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) p[i] = Ss[(ty + 16 * i) * kLdS + c];
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const float b = KVs[c * kLd + tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[i][j] = fmaf(p[i], b, acc[i][j]);
      }
    }
  }

  // rowSum is final: written before the last __syncthreads, not touched since.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = ty + 16 * i, row = q0 + r;
    if (row >= T) continue;
    const float inv = 1.0f / rowSum[r];  // > 0: key 0 is always visible
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      const int d = tx + 16 * j;
      if (d < D) out[base + static_cast<std::size_t>(row) * D + d] = acc[i][j] * inv;
    }
  }
}

template <int kD>
void launchFused(float* out, const float* q, const float* k, const float* v, int BH, int T, int D, cudaStream_t stream) {
  constexpr std::size_t bytes = sharedBytes<kD>();
  // Above 48 KiB a kernel must ask for its dynamic shared memory, once per device: at the first launch,
  // which (in the benchmark) is never inside a CUDA-graph capture.
  if constexpr (bytes > 48u * 1024u) {
    static std::atomic<std::uint64_t> devicesDone{0};  // bit i: device i has the attribute set
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::uint64_t bit = device < 64 ? (std::uint64_t{1} << device) : 0;
    if (!bit || !(devicesDone.load() & bit)) {
      CUDA_CHECK(
          cudaFuncSetAttribute(attentionFusedKernel<kD>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
      devicesDone.fetch_or(bit);
    }
  }
  const int queryTiles = (T + kBr - 1) / kBr;
  const unsigned blocks = static_cast<unsigned>(std::int64_t(BH) * queryTiles);
  attentionFusedKernel<kD>
      <<<blocks, kThreads, bytes, stream>>>(out, q, k, v, T, D, queryTiles, 1.0f / std::sqrt(static_cast<float>(D)));
  CUDA_CHECK(cudaGetLastError());
}

void checkDims(const char* what, int B, int NH, int T, int D) {
  if (B < 1 || NH < 1 || T < 1 || D < 1)
    throw UsageError(fmt::format("{}: B, NH, T and D must be positive (got {}, {}, {}, {})", what, B, NH, T, D));
  // Row and block counts are ints in the kernels.
  if (std::int64_t(B) * NH * T > INT_MAX)
    throw UsageError(fmt::format("{}: B*NH*T = {} is too large", what, std::int64_t(B) * NH * T));
}

// ---- head permutes ----------------------------------------------------------------------------------------

// heads[b, h, t, d] <-> rows[b*T + t, col0 + h*D + d] (row width W), one thread per head element i (runs of
// D consecutive addresses on both sides): kToHeads copies rows -> heads (dst indexed by i, src by the row
// offset), else heads -> rows (dst by the row offset, src by i). Reads and writes B*T*NH*D floats.
template <typename I, bool kToHeads>
__global__ void permuteHeadsKernel(float* dst, const float* src, I count, I T, I NH, I D, I col0, I W) {
  for (I i = static_cast<I>(firstIndex()); i < count; i += static_cast<I>(gridStride())) {
    const I d = i % D;
    I rest = i / D;
    const I t = rest % T;
    rest /= T;
    const I h = rest % NH;
    const I b = rest / NH;
    const I j = (b * T + t) * W + col0 + h * D + d;
    if constexpr (kToHeads)
      dst[i] = src[j];
    else
      dst[j] = src[i];
  }
}

}  // namespace

void attentionForward(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D,
                      cudaStream_t stream) {
  checkDims("attention", B, NH, T, D);
  if (D > kAttentionMaxHeadDim)
    throw UsageError(
        fmt::format("attention: the fused kernel takes head dimensions up to {} (got D = {})", kAttentionMaxHeadDim, D));
  const int BH = B * NH;
  if (D <= 32)
    launchFused<32>(out, q, k, v, BH, T, D, stream);
  else if (D <= 64)
    launchFused<64>(out, q, k, v, BH, T, D, stream);
  else if (D <= 96)
    launchFused<96>(out, q, k, v, BH, T, D, stream);
  else
    launchFused<128>(out, q, k, v, BH, T, D, stream);
}

std::size_t attentionTwoPassWorkspaceBytes(int B, int NH, int T) {
  return 2 * static_cast<std::size_t>(B) * static_cast<std::size_t>(NH) * static_cast<std::size_t>(T) *
         static_cast<std::size_t>(T) * sizeof(float);
}

void attentionForwardTwoPass(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D, Blas& blas,
                             void* workspace, cudaStream_t stream) {
  checkDims("attention (two-pass)", B, NH, T, D);
  const int BH = B * NH;
  const std::int64_t tt = std::int64_t(T) * T, td = std::int64_t(T) * D;
  float* scores = static_cast<float*>(workspace);
  float* probs = scores + static_cast<std::size_t>(BH) * static_cast<std::size_t>(tt);
  // scores_b[T,T] = q_b[T,D] k_b[T,D]^T / sqrt(D), for each of the B*NH (batch, head) pairs.
  GemmSpec s;
  s.transB = true;
  s.m = T;
  s.n = T;
  s.k = D;
  s.lda = D;
  s.ldb = D;
  s.ldc = T;
  s.batch = BH;
  s.strideA = td;
  s.strideB = td;
  s.strideC = tt;
  s.alpha = 1.0f / std::sqrt(static_cast<float>(D));
  blas.gemm(s, q, k, scores, stream);
  // Causal softmax over each row of T scores (row r sees the columns up to r % T).
  softmaxForward(probs, scores, static_cast<std::size_t>(BH) * static_cast<std::size_t>(T), static_cast<std::size_t>(T),
                 static_cast<std::size_t>(T), stream);
  // out_b[T,D] = probs_b[T,T] v_b[T,D].
  GemmSpec o;
  o.m = T;
  o.n = D;
  o.k = T;
  o.lda = T;
  o.ldb = D;
  o.ldc = D;
  o.batch = BH;
  o.strideA = tt;
  o.strideB = td;
  o.strideC = td;
  blas.gemm(o, probs, v, out, stream);
}

namespace {
template <bool kToHeads>
void permuteHeads(float* dst, const float* src, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream) {
  if (B <= 0 || T <= 0 || NH <= 0 || D <= 0) return;
  const std::size_t count = std::size_t(B) * T * NH * D;
  const std::size_t rowsExtent =
      std::size_t(B) * T * std::size_t(std::max(W, 0)) + std::size_t(std::max(col0, 0)) + std::size_t(NH) * D;
  if (fits32(count) && fits32(rowsExtent) && col0 >= 0 && W >= 0)
    permuteHeadsKernel<std::uint32_t, kToHeads>
        <<<elementGrid(count), kBlock, 0, stream>>>(dst, src, static_cast<std::uint32_t>(count), T, NH, D, col0, W);
  else
    permuteHeadsKernel<std::size_t, kToHeads>
        <<<elementGrid(count), kBlock, 0, stream>>>(dst, src, count, std::size_t(T), std::size_t(NH), std::size_t(D),
                                                    static_cast<std::size_t>(col0), static_cast<std::size_t>(W));
  CUDA_CHECK(cudaGetLastError());
}
}  // namespace

void headsFromRows(float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream) {
  permuteHeads<true>(heads, rows, B, T, NH, D, col0, W, stream);
}
void rowsFromHeads(float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream) {
  permuteHeads<false>(rows, heads, B, T, NH, D, col0, W, stream);
}

}  // namespace ts::cuda

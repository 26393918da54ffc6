// Elementwise ops on the GPU (kernels/cpu/elementwise.cpp): GELU, ReLU, bias and residual adds, the bias
// gradient, axpy / scale / sum of squares, the 16-bit casts and the 16-bit storage rounding. Each reads its
// inputs once and writes once: memory-bound. See cuda_ops.h for the arguments.
//
// Numerics. GELU, the adds and the casts let nvcc contract into FMAs: they match the CPU to rounding.
// ReLU, axpy, scale and the rounding repeat the CPU's arithmetic with explicit round-to-nearest intrinsics:
// bit-equal. The sum of squares is float64 and deterministic (partial sums per block, then one block adds
// them, both in a fixed order); biasBackward adds with atomics (the last bits vary from run to run).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/device_resources.h"

namespace ts::cuda {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

// Elementwise, grid-stride: one read and one write per element (8 bytes).
__global__ void geluKernel(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

// dinp += gelu'(x) * dout: reads x, dout, dinp; writes dinp (16 bytes per element).
__global__ void geluBackwardKernel(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float x = inp[i];
    const float t = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
    const float grad = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += grad * dout[i];
  }
}

// out[r, c] = inp[r, c] + bias[c], grid-stride. Reads N*C (+C, cached), writes N*C floats.
__global__ void biasAddKernel(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C) {
  for (std::size_t i = firstIndex(); i < N * C; i += gridStride()) out[i] = inp[i] + bias[i % C];
}

// out = a + b, grid-stride. Reads 2n, writes n floats.
__global__ void residualAddKernel(float* out, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) out[i] = a[i] + b[i];
}

// out = x > 0 ? x : 0 (NaN and -0 give +0, as on the CPU). Reads n, writes n floats.
__global__ void reluForwardKernel(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}
// dinp += dout where x > 0. Reads x, dout, dinp; writes dinp where x > 0.
__global__ void reluBackwardKernel(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride())
    if (inp[i] > 0.0f) dinp[i] = __fadd_rn(dinp[i], dout[i]);
}
// y += alpha x (a rounded product, then a rounded sum, as the CPU). Reads x, y; writes y.
__global__ void axpyKernel(float* y, const float* x, float alpha, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) y[i] = __fadd_rn(y[i], __fmul_rn(alpha, x[i]));
}
// x *= alpha. Reads and writes x.
__global__ void scaleKernel(float* x, float alpha, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) x[i] = __fmul_rn(x[i], alpha);
}

// dbias[c] += sum of dout[r, c] over the rows: each thread owns one column (consecutive threads,
// consecutive columns: coalesced) over slices of kRowsPerSlice rows (blockIdx.y, striding by gridDim.y),
// adding each slice's float sum with one atomicAdd. Reads N*C floats, N/256 atomics per column.
__global__ void biasBackwardKernel(float* dbias, const float* dout, std::size_t N, std::size_t C) {
  const std::size_t c = firstIndex();
  if (c >= C) return;
  for (std::size_t first = firstSliceRow(blockIdx.y); first < N; first += sliceRowStride(gridDim.y)) {
    const std::size_t last = N - first < kRowsPerSlice ? N : first + kRowsPerSlice;
    float s = 0;
    for (std::size_t r = first; r < last; ++r) s += dout[r * C + c];
    atomicAdd(dbias + c, s);
  }
}

// Sum of squares, part 1: block b writes partial[b], the float64 sum of x^2 over its grid-stride share.
// Reads n floats.
__global__ void sumSquaresPartialKernel(double* partial, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) s += static_cast<double>(x[i]) * x[i];
  s = blockSum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
// Part 2, one block: *total = the sum of partial[0 .. count). Reads count doubles.
__global__ void sumPartialsKernel(double* total, const double* partial, std::size_t count) {
  const double s = sumPartials(partial, count);
  if (threadIdx.x == 0) *total = s;
}

// float32 <-> bfloat16 / float16, round to nearest even (the CUDA intrinsics), grid-stride. 6 bytes per element.
__global__ void toBf16Kernel(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(inp[i]));
}

__global__ void toHalfKernel(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) out[i] = __half_as_ushort(__float2half_rn(inp[i]));
}

// The CPU's float <-> bfloat16 / float16 conversions (base/dtype.cpp), on the device, bit for bit.
__device__ std::uint32_t toBFloat16Bits(float f) {
  const std::uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) | 0x40u) & 0xffffu;  // NaN: quieted, sign and payload kept
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;                              // round to nearest even (inf when too large)
}
__device__ float fromBFloat16Bits(std::uint32_t b) { return __uint_as_float(b << 16); }
__device__ std::uint32_t toHalfBits(float f) {
  const std::uint32_t x = __float_as_uint(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (absx >= 0x47800000u) return sign | 0x7c00u;                                   // >= 65536: inf
  if (absx < 0x38800000u) {  // below the smallest normal half: adding 0.5 rounds onto the 2^-24 grid (RNE)
    const std::uint32_t r = __float_as_uint(__fadd_rn(__uint_as_float(absx), 0.5f)) - 0x3f000000u;
    return sign | r;
  }
  return sign | ((absx + 0xc8000fffu + ((absx >> 13) & 1u)) >> 13);  // rebias, round to nearest even (65520 and up: inf)
}
__device__ float fromHalfBits(std::uint32_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = __fmul_rn(static_cast<float>(mant), 5.9604644775390625e-8f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}
// x = bfloat16(x) or float16(x) as float, in place. Reads and writes n floats.
__global__ void roundToBFloat16Kernel(float* x, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) x[i] = fromBFloat16Bits(toBFloat16Bits(x[i]));
}
__global__ void roundToHalfKernel(float* x, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) x[i] = fromHalfBits(toHalfBits(x[i]));
}

}  // namespace

void geluForward(float* out, const float* inp, std::size_t n, cudaStream_t s) {
  geluKernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t s) {
  geluBackwardKernel<<<elementGrid(n), kBlock, 0, s>>>(dinp, inp, dout, n);
  CUDA_CHECK(cudaGetLastError());
}
void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C, cudaStream_t s) {
  biasAddKernel<<<elementGrid(N * C), kBlock, 0, s>>>(out, inp, bias, N, C);
  CUDA_CHECK(cudaGetLastError());
}
void residualAdd(float* out, const float* a, const float* b, std::size_t n, cudaStream_t s) {
  residualAddKernel<<<elementGrid(n), kBlock, 0, s>>>(out, a, b, n);
  CUDA_CHECK(cudaGetLastError());
}

void reluForward(float* out, const float* inp, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  reluForwardKernel<<<elementGrid(n), kBlock, 0, stream>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void reluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  reluBackwardKernel<<<elementGrid(n), kBlock, 0, stream>>>(dinp, inp, dout, n);
  CUDA_CHECK(cudaGetLastError());
}
void biasBackward(float* dbias, const float* dout, std::size_t N, std::size_t C, cudaStream_t stream) {
  if (N == 0 || C == 0) return;
  const ColumnSliceGrid g = columnSliceGrid(N, C);
  biasBackwardKernel<<<dim3(g.x, g.y), kBlock, 0, stream>>>(dbias, dout, N, C);
  CUDA_CHECK(cudaGetLastError());
}
void axpy(float* y, const float* x, float alpha, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  axpyKernel<<<elementGrid(n), kBlock, 0, stream>>>(y, x, alpha, n);
  CUDA_CHECK(cudaGetLastError());
}
void scale(float* x, float alpha, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  scaleKernel<<<elementGrid(n), kBlock, 0, stream>>>(x, alpha, n);
  CUDA_CHECK(cudaGetLastError());
}
double sumOfSquares(const float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) {
    CUDA_CHECK(cudaStreamSynchronize(stream));  // synchronous in every case
    return 0.0;
  }
  const unsigned blocks = reduceGrid(n);
  StreamOrderedBuffer scratch((blocks + 1) * sizeof(double), stream);  // blocks partial sums, then the total
  double* partial = scratch.doubles();
  sumSquaresPartialKernel<<<blocks, kBlock, 0, stream>>>(partial, x, n);
  CUDA_CHECK(cudaGetLastError());
  sumPartialsKernel<<<1, kBlock, 0, stream>>>(partial + blocks, partial, blocks);
  CUDA_CHECK(cudaGetLastError());
  double total = 0;
  CUDA_CHECK(cudaMemcpyAsync(&total, partial + blocks, sizeof(double), cudaMemcpyDeviceToHost, stream));
  scratch.freeAsync();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return total;
}

void castToBFloat16(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t s) {
  toBf16Kernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t s) {
  toHalfKernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void roundToBFloat16(float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  roundToBFloat16Kernel<<<elementGrid(n), kBlock, 0, stream>>>(x, n);
  CUDA_CHECK(cudaGetLastError());
}
void roundToHalf(float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  roundToHalfKernel<<<elementGrid(n), kBlock, 0, stream>>>(x, n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda

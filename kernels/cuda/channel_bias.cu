// The convolution's 16-bit bias add and bias gradient (channel_bias.h).
#include "kernels/cuda/channel_bias.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_common.cuh"

namespace ts::cuda {
namespace {

// The storage types as float and back (round to nearest even).
struct BFloat16 {
  __device__ static float load(std::uint16_t v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
  __device__ static std::uint16_t store(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};
struct Float16 {
  __device__ static float load(std::uint16_t v) { return __half2float(__ushort_as_half(v)); }
  __device__ static std::uint16_t store(float v) { return __half_as_ushort(__float2half_rn(v)); }
};

// The channel of element e of y.
__device__ inline std::size_t channelOf(std::size_t e, std::size_t K, std::size_t PQ, bool channelsLast) {
  return channelsLast ? e % K : (e / PQ) % K;
}

template <typename T>
__global__ void channelBiasAddKernel(std::uint16_t* y, const std::uint16_t* bias, std::size_t n, std::size_t K, std::size_t PQ,
                                     bool channelsLast) {
  for (std::size_t e = firstIndex(); e < n; e += gridStride())
    y[e] = T::store(T::load(y[e]) + T::load(bias[channelOf(e, K, PQ, channelsLast)]));
}

// Block k sums channel k: thread t takes samples' elements t, t + blockDim.x, ... of the channel's N * PQ.
template <typename T>
__global__ void channelBiasBackwardKernel(std::uint16_t* dbias, const std::uint16_t* dy, std::size_t N, std::size_t K,
                                          std::size_t PQ, bool channelsLast, float beta) {
  const std::size_t k = blockIdx.x;
  double s = 0;
  for (std::size_t j = threadIdx.x; j < N * PQ; j += blockDim.x) {
    const std::size_t n = j / PQ, i = j % PQ;
    s += T::load(dy[channelsLast ? (n * PQ + i) * K + k : (n * K + k) * PQ + i]);
  }
  s = blockSum(s);
  if (threadIdx.x == 0)
    dbias[k] = T::store(static_cast<float>(beta == 0.0f ? s : s + static_cast<double>(beta) * T::load(dbias[k])));
}

void requireSixteenBit(DType t, const char* what) {
  if (t != DType::kBFloat16 && t != DType::kFloat16)
    throw Error(fmt::format("internal: {} on {} (bfloat16 or float16 only)", what, dtypeName(t)));
}

}  // namespace

void channelBiasAdd16(std::uint16_t* y, const std::uint16_t* bias, std::size_t N, std::size_t K, std::size_t PQ,
                      bool channelsLast, DType storage, cudaStream_t stream) {
  requireSixteenBit(storage, "channelBiasAdd16");
  const std::size_t n = N * K * PQ;
  if (n == 0) return;
  if (storage == DType::kBFloat16)
    channelBiasAddKernel<BFloat16><<<elementGrid(n), kBlock, 0, stream>>>(y, bias, n, K, PQ, channelsLast);
  else
    channelBiasAddKernel<Float16><<<elementGrid(n), kBlock, 0, stream>>>(y, bias, n, K, PQ, channelsLast);
  CUDA_CHECK(cudaGetLastError());
}

void channelBiasBackward16(std::uint16_t* dbias, const std::uint16_t* dy, std::size_t N, std::size_t K, std::size_t PQ,
                           bool channelsLast, float beta, DType storage, cudaStream_t stream) {
  requireSixteenBit(storage, "channelBiasBackward16");
  if (K == 0) return;
  const unsigned blocks = static_cast<unsigned>(intExtent("conv2d bias channels", K));  // a block per channel, along x
  if (storage == DType::kBFloat16)
    channelBiasBackwardKernel<BFloat16><<<blocks, kBlock, 0, stream>>>(dbias, dy, N, K, PQ, channelsLast, beta);
  else
    channelBiasBackwardKernel<Float16><<<blocks, kBlock, 0, stream>>>(dbias, dy, N, K, PQ, channelsLast, beta);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda

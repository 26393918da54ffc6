#pragma once
// The convolution's bias on 16-bit tensors (bfloat16, float16), by our own kernels: cuDNN 9 marks the
// calls that do it for float32 (cudnnAddTensor, cudnnConvolutionBackwardBias) deprecated and does not
// document them for bfloat16. Float arithmetic, one rounding to the storage type (round to nearest even).
// y holds N x K x PQ elements, channel-major within each sample (NCHW: [N, K, PQ]) or channel-last (NHWC:
// [N, PQ, K]); bias and dbias hold K.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace ts::cuda {

// y[n, k, i] += bias[k].
void channelBiasAdd16(std::uint16_t* y, const std::uint16_t* bias, std::size_t N, std::size_t K, std::size_t PQ,
                      bool channelsLast, DType storage, cudaStream_t stream);
// dbias[k] = sum of dy[n, k, i] over n and i + beta dbias[k] (beta 0: dbias not read). One block per
// channel, summed in float64 in a fixed order: deterministic.
void channelBiasBackward16(std::uint16_t* dbias, const std::uint16_t* dy, std::size_t N, std::size_t K, std::size_t PQ,
                           bool channelsLast, float beta, DType storage, cudaStream_t stream);

}  // namespace ts::cuda

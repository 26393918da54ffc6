// The SM copy and the pointer chase of the link and memory tests (memory_stream.h).
#include "kernels/cuda/memory_stream.h"

#include <cstdint>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_common.cuh"

namespace ts::cuda {
namespace {

// Grid-stride 16-byte copy: each thread moves uint4 elements; costs bytes/16 loads and stores.
__global__ void copy16(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    dst[i] = src[i];
  }
}

// One thread, `steps` dependent loads: the time per step is the load-to-use latency of where chain lives.
__global__ void chase(const std::uint32_t* chain, std::uint64_t steps, std::uint32_t* cursor) {
  std::uint32_t i = *cursor;
  for (std::uint64_t s = 0; s < steps; ++s) i = __ldcg(chain + i);
  *cursor = i;
}

}  // namespace

void smCopy(void* dst, const void* src, std::size_t bytes, int smCount, cudaStream_t stream) {
  if (bytes % sizeof(uint4) != 0 || reinterpret_cast<std::uintptr_t>(dst) % sizeof(uint4) != 0 ||
      reinterpret_cast<std::uintptr_t>(src) % sizeof(uint4) != 0)
    throw Error(fmt::format("internal: an SM copy of {} bytes needs 16-byte sizes and addresses", bytes));
  const std::size_t n = bytes / sizeof(uint4);
  copy16<<<smCount * 4, 512, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), n);
  CUDA_CHECK(cudaGetLastError());
}

void pointerChase(const std::uint32_t* chain, std::uint64_t steps, std::uint32_t* cursor, cudaStream_t stream) {
  chase<<<1, 1, 0, stream>>>(chain, steps, cursor);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda

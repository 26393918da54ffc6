#include "kernels/cuda/stream_gate.h"

#include "kernels/cuda/cuda_check.h"

namespace ts::cuda {
namespace {

__device__ std::uint64_t globalTimerNs() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Moves nothing, computes nothing: polls one mapped host word until it turns non-zero or time runs out.
__global__ void waitForGate(const volatile int* flag, std::uint64_t maxWaitNs) {
  const std::uint64_t start = globalTimerNs();
  while (*flag == 0 && globalTimerNs() - start < maxWaitNs) {
    __nanosleep(1000);
  }
}

}  // namespace

StreamGate::StreamGate() {
  int* h = nullptr;
  CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h), sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  hostFlag_ = h;
  *hostFlag_ = 0;
  CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceFlag_), h, 0));
}

StreamGate::~StreamGate() {
  if (hostFlag_) cudaFreeHost(const_cast<int*>(hostFlag_));
}

void StreamGate::close(cudaStream_t stream, std::uint64_t maxWaitNs) {
  *hostFlag_ = 0;
  waitForGate<<<1, 1, 0, stream>>>(deviceFlag_, maxWaitNs);
  CUDA_CHECK(cudaGetLastError());
}

void StreamGate::open() { *hostFlag_ = 1; }

}  // namespace ts::cuda

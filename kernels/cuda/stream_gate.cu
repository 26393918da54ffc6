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

StreamGate::StreamGate()
    : flag_(sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
      hostFlag_(static_cast<volatile int*>(flag_.get())),
      deviceFlag_(static_cast<int*>(flag_.devicePointer())) {
  *hostFlag_ = 0;
}

void StreamGate::close(cudaStream_t stream, std::uint64_t maxWaitNs) {
  *hostFlag_ = 0;
  waitForGate<<<1, 1, 0, stream>>>(deviceFlag_, maxWaitNs);
  CUDA_CHECK(cudaGetLastError());
}

void StreamGate::open() { *hostFlag_ = 1; }

}  // namespace ts::cuda

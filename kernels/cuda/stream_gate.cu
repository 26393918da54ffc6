#include "kernels/cuda/stream_gate.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"

namespace ts::cuda {
namespace {

__device__ std::uint64_t globalTimerNs() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Moves nothing, computes nothing: polls one mapped host word until it turns non-zero, or time runs out
// (then says so in the second word, which the host reads once the stream has passed).
__global__ void waitForGate(volatile int* words, std::uint64_t maxWaitNs) {
  const std::uint64_t start = globalTimerNs();
  while (words[0] == 0) {
    if (globalTimerNs() - start >= maxWaitNs) {
      words[1] = 1;
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

StreamGate::StreamGate()
    : words_(2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable),
      host_(static_cast<volatile int*>(words_.get())),
      device_(static_cast<int*>(words_.devicePointer())) {
  host_[0] = 0;
  host_[1] = 0;
}

void StreamGate::close(cudaStream_t stream, std::uint64_t maxWaitNs) {
  host_[0] = 0;
  host_[1] = 0;
  maxWaitNs_ = maxWaitNs;
  waitForGate<<<1, 1, 0, stream>>>(device_, maxWaitNs);
  CUDA_CHECK(cudaGetLastError());
}

void StreamGate::open() { host_[0] = 1; }

bool StreamGate::expired() const { return host_[1] != 0; }

void StreamGate::checkOpenedInTime(std::string_view what) const {
  if (!expired()) return;
  throw errorInContext(fmt::format(
      "{}: the stream gate gave up after {:g} s, before the host had queued the timed work (a full launch queue blocks "
      "the host until the device drains it: fewer iterations queue in time), so the times would include the host's "
      "gaps; not recorded",
      what, static_cast<double>(maxWaitNs_) / 1e9));
}

}  // namespace ts::cuda

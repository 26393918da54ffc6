#pragma once
// The GPU side of the memory and link tests (kernels/cpu/memory_stream.h is the host's): copies done by the
// SMs instead of the copy engines, and a pointer chase for load latency.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace ts::cuda {

// dst[i] = src[i] for `bytes` bytes (a multiple of 16), 16-byte loads and stores by every SM; src and
// dst may be on different GPUs when peer access is enabled. Moves `bytes` each way over the link.
void smCopy(void* dst, const void* src, std::size_t bytes, int smCount, cudaStream_t stream);

// Follows a chain of `steps` dependent loads through `chain` (chain[i] holds the index of the next
// element), on one thread, from the index in *cursor, and leaves the last index there: the loads cannot be
// elided, and each launch walks on where the last one stopped, so repeated launches load new lines instead
// of the ones the previous launch left in the L2. The chain may live in another GPU's memory (peer) or in
// mapped host memory.
void pointerChase(const std::uint32_t* chain, std::uint64_t steps, std::uint32_t* cursor, cudaStream_t stream);

}  // namespace ts::cuda

#pragma once
// The pointer chase of `trainscope links` (device load latency), the host side: how far it spans and the
// random cycle it follows. Plain C++, so that CPU tests check both (tests/unit/test_link_records.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts {

// One chain element per 64-byte line, so no two dependent loads share a line.
constexpr std::size_t kChaseLineBytes = 64;

// The bytes the chase spans on a GPU with `l2Bytes` of L2 (cudaDevAttrL2CacheSize; 0 when unknown): eight
// times the L2, at least 256 MiB, in whole MiB. A random chase over S bytes finds about L2/S of its lines
// in the L2, so at 8x the L2 at most an eighth of the loads are L2 hits and the median is device memory's
// latency; the fixed 64 MiB it spanned before fitted in an H100's 50 MB and an H200's 60 MB L2, and
// measured the L2.
std::size_t pointerChaseSpanBytes(std::size_t l2Bytes);

// A random cycle through spanBytes / 64 elements, one per line (defeats caches and prefetch): chain[at]
// holds the index of the next element; the cycle starts at 0 and visits every element once.
std::vector<std::uint32_t> randomCycle(std::size_t spanBytes);

}  // namespace ts

#pragma once
// STREAM-like host memory kernels (McCalpin's STREAM: copy a[i] = b[i], triad a[i] = b[i] + s*c[i]).
// Each moves the minimum STREAM counts: copy 2 x 8 bytes per element, triad 3 x 8 bytes (the write-allocate
// read of `a` is not counted, as STREAM does not). Split over `threads` threads, each on its own slice.
#include <cstddef>

namespace ts::cpu {

void streamCopy(double* a, const double* b, std::size_t n, int threads);
// streamCopy `reps` times over, each thread repeating its own slice, so that a working set that fits a
// cache level is copied from that level (the first pass brings it in) and the threads start once.
void streamCopyRepeated(double* a, const double* b, std::size_t n, int threads, int reps);
void streamTriad(double* a, const double* b, const double* c, double scalar, std::size_t n, int threads);

inline constexpr std::size_t kCopyBytesPerElement = 2 * sizeof(double);
inline constexpr std::size_t kTriadBytesPerElement = 3 * sizeof(double);

}  // namespace ts::cpu

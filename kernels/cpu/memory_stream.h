#pragma once
// STREAM-like host memory kernels (McCalpin's STREAM: copy a[i] = b[i], triad a[i] = b[i] + s*c[i]).
// Each moves the minimum STREAM counts: copy 2 x 8 bytes per element, triad 3 x 8 bytes (the write-allocate
// read of `a` is not counted, as STREAM does not). Split over `threads` threads, each on its own slice.
#include <cstddef>

namespace ts::cpu {

void streamCopy(double* a, const double* b, std::size_t n, int threads);
void streamTriad(double* a, const double* b, const double* c, double scalar, std::size_t n, int threads);

inline constexpr std::size_t kCopyBytesPerElement = 2 * sizeof(double);
inline constexpr std::size_t kTriadBytesPerElement = 3 * sizeof(double);

}  // namespace ts::cpu

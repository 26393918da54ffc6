#include "kernels/cpu/memory_stream.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace ts::cpu {
namespace {

// Runs body(begin, end) on `threads` contiguous slices of [0, n); slices are cache-line multiples so no
// two threads write one line.
template <typename Body>
void parallelSlices(std::size_t n, int threads, Body body) {
  threads = std::max(1, threads);
  if (threads == 1) {
    body(std::size_t{0}, n);
    return;
  }
  const std::size_t per = (n / threads + 7) / 8 * 8;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(n, per * t), end = std::min(n, per * (t + 1));
    if (begin < end) pool.emplace_back([=] { body(begin, end); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace

void streamCopy(double* a, const double* b, std::size_t n, int threads) { streamCopyRepeated(a, b, n, threads, 1); }

void streamCopyRepeated(double* a, const double* b, std::size_t n, int threads, int reps) {
  parallelSlices(n, threads, [=](std::size_t begin, std::size_t end) {
    for (int r = 0; r < reps; ++r) {
      for (std::size_t i = begin; i < end; ++i) a[i] = b[i];
      asm volatile("" : : "r"(a) : "memory");  // each pass's stores are observable: no pass is folded into another
    }
  });
}

void streamTriad(double* a, const double* b, const double* c, double scalar, std::size_t n, int threads) {
  parallelSlices(n, threads, [=](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + scalar * c[i];
  });
}

}  // namespace ts::cpu

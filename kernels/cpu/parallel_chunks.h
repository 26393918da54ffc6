#pragma once
// The CPU kernels' one way to use the compute threads (threads.h), for translation units built with OpenMP
// (kernels/CMakeLists.txt).
#include <cstddef>

#include "kernels/cpu/threads.h"

namespace ts::cpu {

// Runs body(from, to) over [0, n) in contiguous chunks, one per compute thread, when n reaches `grain`
// (smaller work does not pay for waking the threads); otherwise body(0, n) on the calling thread. Chunks
// depend only on n and the thread count, so a kernel whose chunks write disjoint outputs gives the same
// bits at any thread count.
template <class Body>
void parallelChunks(std::size_t n, std::size_t grain, Body&& body);
// Runs body(i) for each i in [0, n), each index to whichever compute thread is free next (dynamic), when
// there are at least two threads and two items; otherwise in order on the calling thread. For items whose
// cost is large and whose results do not depend on the thread that computes them (a whole GEMM of a batch):
// a thread the host preempts then holds up one item, not a fixed share of them.
template <class Body>
void parallelEach(std::size_t n, Body&& body);

namespace detail {
bool parallelWorthIt(std::size_t n, std::size_t grain);
int threadIndex();
int threadCount();
}  // namespace detail

template <class Body>
void parallelChunks(std::size_t n, std::size_t grain, Body&& body) {
  if (!detail::parallelWorthIt(n, grain)) {
    body(std::size_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(computeThreads())
  {
    const auto t = static_cast<std::size_t>(detail::threadIndex()), k = static_cast<std::size_t>(detail::threadCount());
    const std::size_t from = n * t / k, to = n * (t + 1) / k;
    if (from < to) body(from, to);
  }
}

template <class Body>
void parallelEach(std::size_t n, Body&& body) {
  if (!detail::parallelWorthIt(n, 2)) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  const auto count = static_cast<long long>(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(computeThreads())
  for (long long i = 0; i < count; ++i) body(static_cast<std::size_t>(i));
}

}  // namespace ts::cpu

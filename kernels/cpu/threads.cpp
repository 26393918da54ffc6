#include "kernels/cpu/threads.h"

#include <algorithm>
#include <atomic>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef TRAINSCOPE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace ts::cpu {
namespace {
std::atomic<int> gThreads{1};
}

void setComputeThreads(int n) {
  n = std::max(1, n);
  gThreads.store(n);
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  openblas_set_num_threads(n);
#endif
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

int computeThreads() { return gThreads.load(); }

std::string blasThreading() {
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  switch (openblas_get_parallel()) {
    case 0:
      return "serial";
    case 1:
      return "pthread";
    case 2:
      return "openmp";
    default:
      return "unknown";
  }
#else
  return "none";
#endif
}

namespace detail {
bool parallelWorthIt(std::size_t n, std::size_t grain) {
#ifdef _OPENMP
  return gThreads.load() > 1 && n >= grain && !omp_in_parallel();
#else
  (void)n;
  (void)grain;
  return false;
#endif
}
int threadIndex() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}
int threadCount() {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}
}  // namespace detail

}  // namespace ts::cpu

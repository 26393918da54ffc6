// The reference for trainscope's MPI overhead (scripts/bench-collectives.sh): the smallest honest
// MPI_Allreduce timing loop, with nothing of trainscope in it. Same method as trainscope's MPI timer:
// a barrier before each iteration (untimed), steady_clock around the call, the slowest rank per
// iteration, the median over iterations; MPI initialised for MPI_THREAD_SINGLE as trainscope does.
// Prints "bytes median_us" per size on rank 0.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long minBytes = argc > 1 ? std::atol(argv[1]) : 8;
  const long maxBytes = argc > 2 ? std::atol(argv[2]) : 1 << 24;
  const int warmup = argc > 3 ? std::atoi(argv[3]) : 5;
  const int iters = argc > 4 ? std::atoi(argv[4]) : 20;
  // Page-aligned and zeroed, as trainscope's MPI buffers are: alignment alone moves large-message times
  // by tens of percent on shared memory, so both sides must use the same kind of buffer.
  const std::size_t bytesAlloc = (static_cast<std::size_t>(maxBytes) + 4095) / 4096 * 4096;
  auto* send = static_cast<float*>(std::aligned_alloc(4096, bytesAlloc));
  auto* recv = static_cast<float*>(std::aligned_alloc(4096, bytesAlloc));
  std::memset(send, 0, bytesAlloc);
  std::memset(recv, 0, bytesAlloc);
  for (long bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
    const int count = static_cast<int>(bytes / 4);
    for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    std::vector<double> us(iters), slowest(iters);
    for (int i = 0; i < iters; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      const auto t1 = std::chrono::steady_clock::now();
      us[i] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    MPI_Reduce(us.data(), slowest.data(), iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::sort(slowest.begin(), slowest.end());
      const double median = iters % 2 ? slowest[iters / 2] : 0.5 * (slowest[iters / 2 - 1] + slowest[iters / 2]);
      std::printf("%ld %.3f\n", bytes, median);
    }
  }
  std::free(send);
  std::free(recv);
  MPI_Finalize();
  return 0;
}

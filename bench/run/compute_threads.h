#pragma once
// How many compute threads each process runs (OpenBLAS, the CPU kernels' OpenMP pool, oneDNN): one policy for
// every subcommand, decided when a run starts and recorded in the result (run.threads).
//   TRAINSCOPE_THREADS=N   N threads per process;
//   OMP_NUM_THREADS=N      the OpenMP convention, honoured when TRAINSCOPE_THREADS is unset (a list for nested
//                          levels, "4,2", gives its first: trainscope's parallel regions do not nest);
//   otherwise              the CPUs this process may run on divided among the run's processes on this host
//                          (at least 1): two ranks on 2 cores get 1 thread each, never 2 x 2 threads fighting
//                          for 2 cores.
#include <nlohmann/json.hpp>

namespace ts {

struct ComputeThreads {
  int perProcess = 1;
  const char* source = "auto";  // "auto", "TRAINSCOPE_THREADS" or "OMP_NUM_THREADS"
  int cpus = 1;                 // CPUs in this process's affinity mask
  int processesOnHost = 1;
  nlohmann::json toJson() const;
};

// Decides from the environment (UsageError naming the variable for a value that is not a whole number in
// [1, 4096], or for OMP_NUM_THREADS a list of them); does not apply it.
ComputeThreads decideComputeThreads(int processesOnHost);
// Sets the thread counts of the process's compute libraries.
void applyComputeThreads(const ComputeThreads& t);

}  // namespace ts

#pragma once
// nccl-tests' flags that trainscope's own do not already spell the same way (-b -e -f -i -d -o -r -n -w -G
// are shared): what a user pastes from a nccl-tests command line means here what it means there, or is one
// error line naming what trainscope does instead (collectives_command.cpp declares them, command line only).
//   -t N   threads per process: trainscope drives a process's GPUs from one thread (1 only)
//   -g N   GPUs per thread: --gpus-per-process (an alias of it)
//   -c 0|1 check results: --no-check | --check
//   -z 0|1 blocking collectives: trainscope queues the iterations and waits once (0 only)
//   -a N   which rank's time: trainscope reports the slowest rank's per iteration (nccl-tests' -a 3 only)
//   -R N   buffer registration: none (0 only)
//   -m N   operations aggregated per iteration: one (1 only)
//   -N N   run cycles (the sweep N times, each printed): one (1 only; --trials N repeats each size and reports the spread)
//   -p 0|1 initialise NCCL from threads in parallel: with one thread per process both are the same
//   -y N   the default (NULL) stream: trainscope launches on a stream of its own (0 only)
//   -T S   timeout: --timeout (an alias of it)
//   -C N   report CPU time instead of the operation's time: the operation's (0 only)
//   -S N   a timestamp on every line of the table: none there (0 only); the result document records when the run started
//   -J F   the output file: --json (an alias of it; trainscope's result document, which `import` does not need)
//   -O     no flag of nccl-tests: one line naming -o (the reduction) and -J (the output file)
#include <string>

namespace ts {

struct CollectivesOptions;

struct NcclTestsFlags {
  int threads = 1, check = -1, blocking = 0, average = -1, localRegister = 0, aggIters = 1;  // -1: not given
  int runCycles = 1, parallelInit = 0, streamNull = 0, cpuTime = 0, timestamps = 0;
  std::string capitalO;  // -O's value: given, it is answered with one line
};

// Applies them to o, or throws a UsageError that names the flag and trainscope's way.
void applyNcclTestsFlags(const NcclTestsFlags& f, CollectivesOptions& o);

}  // namespace ts

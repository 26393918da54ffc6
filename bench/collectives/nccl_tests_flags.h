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
namespace ts {

struct CollectivesOptions;

struct NcclTestsFlags {
  int threads = 1, check = -1, blocking = 0, average = -1, localRegister = 0, aggIters = 1;  // -1: not given
};

// Applies them to o, or throws a UsageError that names the flag and trainscope's way.
void applyNcclTestsFlags(const NcclTestsFlags& f, CollectivesOptions& o);

}  // namespace ts

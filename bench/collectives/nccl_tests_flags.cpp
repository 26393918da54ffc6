#include "bench/collectives/nccl_tests_flags.h"

#include <fmt/format.h>

#include "base/error.h"
#include "bench/collectives/collectives_options.h"

namespace ts {
namespace {
void onlyValue(const char* flag, int given, int accepted, const char* why) {
  if (given != accepted)
    throw UsageError(
        fmt::format("{} {} (as nccl-tests reads it): {}; only {} {} means the same here", flag, given, why, flag, accepted));
}
}  // namespace

void applyNcclTestsFlags(const NcclTestsFlags& f, CollectivesOptions& o) {
  onlyValue("-t", f.threads, 1,
            "trainscope drives a process's GPUs from one thread (more GPUs: -g / --gpus-per-process, or more processes)");
  onlyValue("-z", f.blocking, 0, "trainscope queues a size's iterations and waits for them once, as nccl-tests -z 0 does");
  if (f.average >= 0)
    onlyValue("-a", f.average, 3, "trainscope reports the slowest rank's time of every iteration (nccl-tests' -a 3: max)");
  onlyValue("-R", f.localRegister, 0, "trainscope does not register its buffers with NCCL");
  onlyValue("-m", f.aggIters, 1, "trainscope times one operation per iteration");
  onlyValue("-N", f.runCycles, 1,
            "nccl-tests repeats the whole sweep and prints each cycle; trainscope repeats each size --trials times and reports "
            "the spread (--trials N)");
  if (f.parallelInit != 0 && f.parallelInit != 1)
    throw UsageError(
        fmt::format("-p {}: 0 or 1 (with one thread per process, NCCL is set up the same either way)", f.parallelInit));
  onlyValue("-y", f.streamNull, 0, "trainscope launches every operation on a stream of its own, never the default stream");
  onlyValue("-C", f.cpuTime, 0, "trainscope reports the time of the operation itself (the slowest rank's), not the CPU's");
  onlyValue("-S", f.timestamps, 0,
            "trainscope's table has no timestamp column; the result document (--json) records when the run started");
  if (!f.capitalO.empty())
    throw UsageError(
        fmt::format("-O {}: nccl-tests has no -O; its reduction is -o (here -o/--redop), its output file -J (here "
                    "-J or --json FILE)",
                    f.capitalO));
  if (f.check >= 0) {
    if (f.check > 1) throw UsageError(fmt::format("-c {}: 0 (no check, --no-check) or 1 (check, --check)", f.check));
    o.check = f.check == 1;
  }
}

}  // namespace ts

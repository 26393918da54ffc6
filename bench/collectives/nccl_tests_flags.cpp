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
  if (f.check >= 0) {
    if (f.check > 1) throw UsageError(fmt::format("-c {}: 0 (no check, --no-check) or 1 (check, --check)", f.check));
    o.check = f.check == 1;
  }
}

}  // namespace ts

#include "comm/gpu_plan.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ts {
namespace {

std::string gpuRange(int first, int count) {
  return count == 1 ? fmt::format("cuda:{}", first) : fmt::format("cuda:{}..cuda:{}", first, first + count - 1);
}

std::string gpus(int n) { return fmt::format("{} GPU{}", n, n == 1 ? "" : "s"); }

}  // namespace

std::vector<int> planLocalGpus(const GpuChoice& choice, int localRank, int visible) {
  if (choice.perProcess < 0) throw UsageError(fmt::format("--gpus-per-process {} cannot be negative", choice.perProcess));
  if (choice.first >= 0) {
    const int count = choice.perProcess == 0 ? visible - choice.first : choice.perProcess;
    if (count < 1 || choice.first + count > visible)
      throw UsageError(fmt::format("--device cuda:{}{}: this host has {} (cuda:0..cuda:{})", choice.first,
                                   choice.perProcess > 1 ? fmt::format(" with --gpus-per-process {}", choice.perProcess) : "",
                                   gpus(visible), visible - 1));
    std::vector<int> out;
    for (int g = 0; g < count; ++g) out.push_back(choice.first + g);
    return out;
  }
  const int count = choice.perProcess == 0 ? visible : choice.perProcess;
  if (count > visible)
    throw UsageError(fmt::format("--gpus-per-process {} asks for more GPUs than this host has ({})", count, visible));
  const int first = localRank * count;
  if (first + count > visible)
    throw UsageError(fmt::format(
        "this host has {} and runs {} or more processes of this job, {} each: its local process {} would drive {}. Start "
        "at most {} process{} per host, or share GPUs deliberately: --device cuda:0 and a distinct NCCL_HOSTID for each "
        "process (docs/gpu-validation.md)",
        gpus(visible), localRank + 1, gpus(count), localRank, gpuRange(first, count), visible / count,
        visible / count == 1 ? "" : "es"));
  std::vector<int> out;
  for (int g = 0; g < count; ++g) out.push_back(first + g);
  return out;
}

}  // namespace ts

#include "bench/session/compute_threads.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/threads.h"

namespace ts {
namespace {

constexpr int kMaxThreads = 4096;

std::optional<int> threadsFrom(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (!std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || n < 1 || n > kMaxThreads)
    throw UsageError(fmt::format("{}={}: expected a whole number of threads from 1 to {}", name, v, kMaxThreads));
  return static_cast<int>(n);
}

int cpusOfThisProcess() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

}  // namespace

nlohmann::json ComputeThreads::toJson() const {
  return {{"per_process", perProcess},
          {"source", source},
          {"cpus", cpus},
          {"processes_on_host", processesOnHost},
          {"blas", cpu::blasThreading()}};
}

ComputeThreads decideComputeThreads(int processesOnHost) {
  ComputeThreads t;
  t.cpus = cpusOfThisProcess();
  t.processesOnHost = std::max(1, processesOnHost);
  if (const auto n = threadsFrom("TRAINSCOPE_THREADS")) {
    t.perProcess = *n;
    t.source = "TRAINSCOPE_THREADS";
  } else if (const auto m = threadsFrom("OMP_NUM_THREADS")) {
    t.perProcess = *m;
    t.source = "OMP_NUM_THREADS";
  } else {
    t.perProcess = std::max(1, t.cpus / t.processesOnHost);
  }
  return t;
}

void applyComputeThreads(const ComputeThreads& t) { cpu::setComputeThreads(t.perProcess); }

}  // namespace ts

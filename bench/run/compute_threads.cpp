#include "bench/run/compute_threads.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/error.h"
#include "base/terminal_text.h"
#include "kernels/cpu/threads.h"

namespace ts {
namespace {

constexpr int kMaxThreads = 4096;

// One count: digits only, 1 to kMaxThreads.
std::optional<int> countOf(std::string_view text) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || ec != std::errc() ||
      end != text.data() + text.size() || n < 1 || n > kMaxThreads)
    return std::nullopt;
  return n;
}

// TRAINSCOPE_THREADS: one count.
std::optional<int> trainscopeThreads() {
  const char* v = std::getenv("TRAINSCOPE_THREADS");
  if (!v || !*v) return std::nullopt;
  if (const auto n = countOf(v)) return n;
  throw UsageError(
      fmt::format("TRAINSCOPE_THREADS={}: expected a whole number of threads from 1 to {}", printable(v), kMaxThreads));
}

// OMP_NUM_THREADS: as OpenMP defines it, a list of counts, one per nesting level ("4,2"), spaces around each allowed; the
// first level's applies (trainscope's parallel regions do not nest). Every level is checked: a typo is no setting.
std::optional<int> openmpThreads() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (!v || !*v) return std::nullopt;
  std::optional<int> first;
  bool good = true;
  for (std::string_view rest = v; good;) {
    const std::size_t comma = rest.find(',');
    std::string_view level = rest.substr(0, comma);
    while (!level.empty() && (level.front() == ' ' || level.front() == '\t')) level.remove_prefix(1);
    while (!level.empty() && (level.back() == ' ' || level.back() == '\t')) level.remove_suffix(1);
    const auto n = countOf(level);
    good = n.has_value();
    if (!first) first = n;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (good) return first;
  throw UsageError(
      fmt::format("OMP_NUM_THREADS={}: expected a whole number of threads from 1 to {}, or a list of them, one per nesting "
                  "level (4,2: the first applies)",
                  printable(v), kMaxThreads));
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
  if (const auto n = trainscopeThreads()) {
    t.perProcess = *n;
    t.source = "TRAINSCOPE_THREADS";
  } else if (const auto m = openmpThreads()) {
    t.perProcess = *m;
    t.source = "OMP_NUM_THREADS";
  } else {
    t.perProcess = std::max(1, t.cpus / t.processesOnHost);
  }
  return t;
}

void applyComputeThreads(const ComputeThreads& t) { cpu::setComputeThreads(t.perProcess); }

}  // namespace ts

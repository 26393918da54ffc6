#include "bench/cpu_contention.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace ts {
namespace {

double selfCpuSeconds() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

std::optional<double> othersCpuFraction(const CpuTimes& before, const CpuTimes& after, double selfSeconds, double ticksPerSecond) {
  if (after.total <= before.total || after.busy < before.busy || !(ticksPerSecond > 0)) return std::nullopt;
  const double busyS = static_cast<double>(after.busy - before.busy) / ticksPerSecond;
  const double totalS = static_cast<double>(after.total - before.total) / ticksPerSecond;
  return std::clamp((busyS - selfSeconds) / totalS, 0.0, 1.0);
}

OthersCpuMeter::OthersCpuMeter() : start_(readProcStat()), selfStartS_(selfCpuSeconds()) {}

std::optional<double> OthersCpuMeter::fraction() const {
  const std::optional<CpuTimes> now = readProcStat();
  if (!start_ || !now) return std::nullopt;
  return othersCpuFraction(*start_, *now, selfCpuSeconds() - selfStartS_, static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

}  // namespace ts

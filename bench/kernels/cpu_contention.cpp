#include "bench/kernels/cpu_contention.h"

#include <sys/resource.h>
#include <unistd.h>

namespace ts {
namespace {

double selfCpuSeconds() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

OthersCpuMeter::OthersCpuMeter() : start_(readProcStat()), selfStartS_(selfCpuSeconds()) {}

std::optional<double> OthersCpuMeter::fraction() const {
  const std::optional<CpuTimes> now = readProcStat();
  if (!start_ || !now || now->total <= start_->total) return std::nullopt;    // no tick passed: too short to tell
  const double ticksPerSecond = static_cast<double>(::sysconf(_SC_CLK_TCK));  // /proc/stat's unit
  return othersBusyFraction(*start_, *now, (selfCpuSeconds() - selfStartS_) * ticksPerSecond);
}

}  // namespace ts

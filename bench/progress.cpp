#include "bench/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace ts {

Progress::Progress(std::string task, std::size_t totalSteps, bool enabled)
    : task_(std::move(task)), total_(totalSteps), enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), lastPrint_(start_) {}

Progress::~Progress() { done(); }

void Progress::step(const std::string& what) {
  ++current_;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double sinceLast = std::chrono::duration<double>(now - lastPrint_).count();
  if (elapsed < 2.0 || (!tty_ && sinceLast < 10.0) || (tty_ && sinceLast < 0.2)) return;
  lastPrint_ = now;
  print(what);
}

void Progress::print(const std::string& what) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ ? static_cast<double>(current_ - 1) / static_cast<double>(total_) : 0;
  std::string eta;
  if (frac > 0.05) eta = fmt::format(", ~{:.0f} s left", elapsed / frac * (1 - frac));
  const std::string line = fmt::format("[{}] {}/{} {} ({:.0f} s elapsed{})", task_, current_, total_, what, elapsed, eta);
  if (tty_) std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  printed_ = true;
}

void Progress::done() {
  if (enabled_ && tty_ && printed_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  printed_ = false;
}

}  // namespace ts

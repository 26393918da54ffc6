#include "bench/run/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace ts {

Progress::Progress(std::string task, double totalWork, bool enabled)
    : task_(std::move(task)),
      total_(totalWork),
      enabled_(enabled),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      lastPrint_(start_) {}

Progress::~Progress() { done(); }

void Progress::step(const std::string& what, double work) {
  done_ += pending_;
  pending_ = work;
  ++steps_;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double sinceLast = std::chrono::duration<double>(now - lastPrint_).count();
  if (elapsed < 2.0 || (!tty_ && printedAny_ && sinceLast < 10.0) || (tty_ && sinceLast < 0.2)) return;
  lastPrint_ = now;
  print(what);
}

void Progress::print(const std::string& what) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ > 0 ? done_ / total_ : 0;
  std::string eta;
  if (frac > 0.02) eta = fmt::format(", ~{:.0f} s left", elapsed / frac * (1 - frac));
  const std::string line = fmt::format("[{}] {:.0f}% {} ({:.0f} s elapsed{})", task_, 100 * frac, what, elapsed, eta);
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  printed_ = true;
  printedAny_ = true;
}

void Progress::done() {
  if (enabled_ && tty_ && printed_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  printed_ = false;
}

}  // namespace ts

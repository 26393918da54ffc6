#pragma once
// The CPU kernels' compute threads set for a test's scope, so that its thread count does not leak into the
// tests after it (the count is the process's: kernels/cpu/threads.h).
#include "kernels/cpu/threads.h"

namespace ts::test {

class ComputeThreadsScope {
 public:
  explicit ComputeThreadsScope(int n) : before_(cpu::computeThreads()) { cpu::setComputeThreads(n); }
  ~ComputeThreadsScope() { cpu::setComputeThreads(before_); }
  ComputeThreadsScope(const ComputeThreadsScope&) = delete;
  ComputeThreadsScope& operator=(const ComputeThreadsScope&) = delete;

 private:
  int before_;
};

}  // namespace ts::test

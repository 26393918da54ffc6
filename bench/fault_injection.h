#pragma once
// Planted faults, for the tests of trainscope's own error handling (never for measurements):
//   TRAINSCOPE_FAULT="<kind>:rank=<r>[:op=<name>][:bytes=<n>]"
//     corrupt — rank r changes one element of its output before the result check (the check must catch it)
//     hang    — rank r stops inside the operation and never returns (--timeout must end the run)
//     die     — rank r kills itself (SIGKILL) inside the operation (the launcher must end the run)
//     delay   — rank r sleeps <ms> milliseconds (:ms=<n>, default 10) before each timed operation
// op and bytes restrict the fault to one collective and size; without them it fires at the first one.
// In `train`, :step=<n> places it at the start of training step n on rank r (hang, die, delay): the other
// ranks are then in the middle of that step, waiting for it.
#include <cstddef>
#include <optional>
#include <string>

namespace ts {

struct Fault {
  enum class Kind { kCorrupt, kHang, kDie, kDelay } kind = Kind::kCorrupt;
  int rank = 0;
  std::string op;         // "" = any
  std::size_t bytes = 0;  // 0 = any
  int delayMs = 10;
  long long step = -1;  // train: the step it fires at (-1: not a training fault)

  bool matches(int rank_, const std::string& op_, std::size_t bytes_) const {
    return rank_ == rank && (op.empty() || op == op_) && (bytes == 0 || bytes == bytes_);
  }
};

// From TRAINSCOPE_FAULT; nullopt when unset. UsageError when malformed.
std::optional<Fault> faultFromEnvironment();
std::optional<Fault> parseFault(const std::string& spec);

// The in-operation faults: hang never returns, die never returns, delay sleeps.
void injectInOperation(const Fault& f);

}  // namespace ts

#pragma once
// Planted faults, for the tests of trainscope's own error handling (never for measurements):
//   TRAINSCOPE_FAULT="<kind>:rank=<r>[:<key>=<value>]..."   (the kinds: Fault::Kind, the keys: FaultKey, both below;
//   README.md's Testing section lists the same, tests/unit/test_fault_injection.cpp holds it to them)
//     corrupt — rank r changes one element of its output before the result check (the check must catch it)
//     hang    — rank r stops inside the operation and never returns (--timeout must end the run)
//     freeze  — rank r stops its whole process inside the operation (SIGSTOP, its watchdog too), as a frozen
//               host would: the ranks waiting for it must end the run, and say so once
//     die     — rank r kills itself (SIGKILL) inside the operation (the launcher must end the run)
//     delay   — rank r sleeps <ms> milliseconds (:ms=<n>, default 10) before each timed operation
//     ceiling — rank r (a process that measures: in `kernels` the first of each host, in `train` and `links` process 0)
//               scales every roofline/MFU ceiling it measures, and every link peak `links` holds a figure to, by
//               <scale> (:scale=<x>, default 0.01), so that kernels, MFU and link bandwidths land above 100% of it and
//               the ceiling_suspect path (re-measure, then flag) can be tested without a busy machine, and a host
//               with a slow CPU planted (accept)
// op and bytes restrict the fault to one collective and size; without them it fires at the first one.
// In `train`, :step=<n> places it at the start of training step n on rank r (hang, freeze, die, delay): the other
// ranks are then in the middle of that step, waiting for it.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/enum_names.h"

namespace ts {

struct Fault {
  enum class Kind { kCorrupt, kHang, kFreeze, kDie, kDelay, kCeiling, kRouter } kind = Kind::kCorrupt;
  int rank = 0;
  std::string op;         // "" = any
  std::size_t bytes = 0;  // 0 = any
  int delayMs = 10;
  long long step = -1;  // train: the step it fires at (-1: not a training fault)
  double scale = 0.01;  // ceiling: the factor on each measured ceiling; router: the logit step

  // The faults that act inside a timed operation (injectInOperation); corrupt acts on the output, ceiling
  // on the ceilings.
  bool inOperation() const { return kind == Kind::kHang || kind == Kind::kFreeze || kind == Kind::kDie || kind == Kind::kDelay; }

  bool matches(int rank_, const std::string& op_, std::size_t bytes_) const {
    return rank_ == rank && (op.empty() || op == op_) && (bytes == 0 || bytes == bytes_);
  }
};

template <>
struct EnumNames<Fault::Kind> {
  static constexpr std::pair<std::string_view, Fault::Kind> kNames[] = {
      {"corrupt", Fault::Kind::kCorrupt}, {"hang", Fault::Kind::kHang},   {"freeze", Fault::Kind::kFreeze},
      {"die", Fault::Kind::kDie},         {"delay", Fault::Kind::kDelay}, {"ceiling", Fault::Kind::kCeiling},
      {"router", Fault::Kind::kRouter}};
};

// The settings after the kind (`:rank=1:ms=20`), each setting the Fault field of its name.
enum class FaultKey { kRank, kOp, kBytes, kMs, kStep, kScale };
template <>
struct EnumNames<FaultKey> {
  static constexpr std::pair<std::string_view, FaultKey> kNames[] = {{"rank", FaultKey::kRank},   {"op", FaultKey::kOp},
                                                                     {"bytes", FaultKey::kBytes}, {"ms", FaultKey::kMs},
                                                                     {"step", FaultKey::kStep},   {"scale", FaultKey::kScale}};
};

// Whether a fault of `kind` reads `key` (the comment at the top says what each does); a key it would ignore is refused.
bool faultTakes(Fault::Kind kind, FaultKey key);

// From TRAINSCOPE_FAULT; nullopt when unset. UsageError when malformed.
std::optional<Fault> faultFromEnvironment();
std::optional<Fault> parseFault(const std::string& spec);

// The in-operation faults: hang never returns, die never returns, delay sleeps.
void injectInOperation(const Fault& f);

// The factor a planted `ceiling` fault puts on the ceilings process `rank` measures (1: none).
double plantedCeilingScale(const std::optional<Fault>& f, int rank);
// The logit step a planted `router` fault gives process `rank`'s MoE routers (0: none).
double plantedRouterSkew(const std::optional<Fault>& f, int rank);

}  // namespace ts

#include "bench/failures/fault_injection.h"

#include <charconv>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/units.h"
#include "bench/failures/activity.h"

namespace ts {
namespace {

double parseScale(const std::string& value) {
  char* end = nullptr;
  const double x = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end || !(x > 0))
    throw UsageError(fmt::format("TRAINSCOPE_FAULT: scale '{}' must be a number > 0", value));
  return x;
}

// rank=, ms= and step= take whole numbers, all of the text ("abc" is no rank 0).
long long integerOf(const std::string& key, const std::string& value, long long max = std::numeric_limits<int>::max()) {
  long long x = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || x < 0 || x > max)
    throw UsageError(fmt::format("TRAINSCOPE_FAULT: {}='{}' must be a whole number in [0, {}]", key, value, max));
  return x;
}

}  // namespace

bool faultTakes(Fault::Kind kind, FaultKey key) {
  Fault probe;
  probe.kind = kind;
  switch (key) {
    case FaultKey::kRank:
      return true;
    case FaultKey::kOp:
    case FaultKey::kBytes:
      return kind != Fault::Kind::kCeiling && kind != Fault::Kind::kRouter;  // both act outside any collective
    case FaultKey::kMs:
      return kind == Fault::Kind::kDelay;
    case FaultKey::kStep:
      return probe.inOperation();  // a training step's start is where it acts
    case FaultKey::kScale:
      return kind == Fault::Kind::kCeiling || kind == Fault::Kind::kRouter;
  }
  return false;
}

std::optional<Fault> parseFault(const std::string& spec) {
  std::istringstream in(spec);
  std::string part;
  Fault f;
  bool first = true;
  bool haveRank = false;
  while (std::getline(in, part, ':')) {
    if (first) {
      first = false;
      const std::optional<Fault::Kind> kind = enumFromName<Fault::Kind>(part);
      if (!kind)
        throw UsageError(fmt::format("TRAINSCOPE_FAULT: unknown fault '{}' (one of {})", part, enumNameList<Fault::Kind>()));
      f.kind = *kind;
      continue;
    }
    const auto eq = part.find('=');
    if (eq == std::string::npos) throw UsageError(fmt::format("TRAINSCOPE_FAULT: '{}' is not key=value", part));
    const std::string name = part.substr(0, eq), value = part.substr(eq + 1);
    const std::optional<FaultKey> key = enumFromName<FaultKey>(name);
    if (!key) throw UsageError(fmt::format("TRAINSCOPE_FAULT: unknown key '{}' (one of {})", name, enumNameList<FaultKey>()));
    if (!faultTakes(f.kind, *key)) {
      std::vector<std::string> takes;
      for (const auto& [n, k] : EnumNames<FaultKey>::kNames)
        if (faultTakes(f.kind, k)) takes.push_back(std::string(n) + "=");
      throw UsageError(
          fmt::format("TRAINSCOPE_FAULT: a {} fault takes no {}= (it takes {})", nameOf(f.kind), name, fmt::join(takes, ", ")));
    }
    switch (*key) {
      case FaultKey::kRank:
        f.rank = static_cast<int>(integerOf(name, value));
        haveRank = true;
        break;
      case FaultKey::kOp:
        f.op = value;
        break;
      case FaultKey::kBytes:
        f.bytes = parseBytes(value, "TRAINSCOPE_FAULT bytes");
        break;
      case FaultKey::kMs:
        f.delayMs = static_cast<int>(integerOf(name, value));
        break;
      case FaultKey::kStep:
        f.step = integerOf(name, value, std::numeric_limits<long long>::max());
        break;
      case FaultKey::kScale:
        f.scale = parseScale(value);
        break;
    }
  }
  if (first) return std::nullopt;
  if (!haveRank) throw UsageError("TRAINSCOPE_FAULT: rank=<r> is required");
  return f;
}

std::optional<Fault> faultFromEnvironment() {
  const char* v = std::getenv("TRAINSCOPE_FAULT");
  if (!v || !*v) return std::nullopt;
  return parseFault(v);
}

void injectInOperation(const Fault& f) {
  switch (f.kind) {
    case Fault::Kind::kHang:
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    case Fault::Kind::kFreeze:
      // A frozen host never speaks again: its watchdog stops with it, and when the launcher ends the job (which
      // sends SIGCONT before SIGTERM) it leaves without a word, as if it were gone.
      activity::errorReported();
      std::raise(SIGSTOP);
      std::_Exit(128 + SIGKILL);
    case Fault::Kind::kDie:
      std::raise(SIGKILL);
      break;
    case Fault::Kind::kDelay:
      std::this_thread::sleep_for(std::chrono::milliseconds(f.delayMs));
      break;
    case Fault::Kind::kCorrupt:
    case Fault::Kind::kCeiling:
    case Fault::Kind::kRouter:
      break;
  }
}

double plantedCeilingScale(const std::optional<Fault>& f, int rank) {
  return f && f->kind == Fault::Kind::kCeiling && f->rank == rank ? f->scale : 1.0;
}

double plantedRouterSkew(const std::optional<Fault>& f, int rank) {
  return f && f->kind == Fault::Kind::kRouter && f->rank == rank ? f->scale : 0.0;
}

}  // namespace ts

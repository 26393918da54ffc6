#pragma once
// Seconds on the steady clock, as a double: the one clock that waits, timeouts and step origins are read from
// (a wall clock can step backwards under NTP; differences of these never do).
#include <chrono>

namespace ts {

inline double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace ts

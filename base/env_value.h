#pragma once
// An environment variable that is set and not empty, or nullptr: launchers export a variable empty about as often
// as they leave it unset, and both mean "not given".
#include <cstdlib>

namespace ts {

inline const char* envValue(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

}  // namespace ts

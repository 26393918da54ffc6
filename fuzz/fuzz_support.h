#pragma once
// What every fuzz target holds a reader to: on any input it returns, or throws a UsageError (the one clear
// line a user sees). Any other exception escapes to libFuzzer, which reports it as a crash with the input;
// so do AddressSanitizer and UBSan findings and a broken invariant (check()).
#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace ts::fuzz {

template <class Read>
int onlyUsageErrors(Read&& read) {
  try {
    read();
  } catch (const UsageError&) {
  }
  return 0;
}

// An invariant of what the reader returned; a crash (with the input saved) when it does not hold.
inline void check(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace ts::fuzz

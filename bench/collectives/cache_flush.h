#pragma once
// --cache cold's flush (collectives_choices.h): a buffer larger than the last-level cache, written through the caches
// before each timed iteration, so that the call that follows reads its own buffers from memory, as a training step's
// collectives do. Allocated on first use: a hot sweep holds none of it.
#include <cstddef>
#include <vector>

namespace ts {

class CacheFlush {
 public:
  explicit CacheFlush(std::size_t bytes) : bytes_(bytes) {}
  // Every cache line of the buffer read and written once. Not memset: for sizes near the cache's, glibc writes with
  // non-temporal stores, which go around the caches and would leave the call's buffers in them.
  void run();

 private:
  std::size_t bytes_;
  std::vector<unsigned char> buffer_;
};

}  // namespace ts

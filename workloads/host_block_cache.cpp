#include "workloads/host_block_cache.h"

#include <cstdlib>
#include <cstring>

namespace ts::wl {

HostBlockCache::~HostBlockCache() {
  for (const auto& [capacity, p] : free_) std::free(p);
  // Blocks still handed out belong to their arenas, which release them before the device goes.
}

void* HostBlockCache::take(std::size_t bytes) {
  void* p = nullptr;
  std::size_t capacity = bytes;
  const auto fit = free_.lower_bound(bytes);
  if (fit != free_.end() && fit->first / 2 <= bytes) {
    capacity = fit->first;
    p = fit->second;
    free_.erase(fit);
    cached_ -= capacity;
    std::memset(p, 0, bytes);  // as calloc: a tensor starts zeroed
  } else {
    p = std::calloc(1, bytes);
    if (!p) return nullptr;
  }
  handed_[p] = capacity;
  inUse_ += capacity;
  if (inUse_ > highWater_) highWater_ = inUse_;
  // A new block beside cached ones that did not fit it: the smallest of those go (the cheapest to fault in again)
  // until the blocks held are back within the most in use at once.
  while (inUse_ + cached_ > highWater_) {
    const auto smallest = free_.begin();
    cached_ -= smallest->first;
    std::free(smallest->second);
    free_.erase(smallest);
  }
  return p;
}

bool HostBlockCache::give(void* p) {
  const auto it = handed_.find(p);
  if (it == handed_.end()) return false;
  const std::size_t capacity = it->second;
  handed_.erase(it);
  inUse_ -= capacity;
  // Kept: the blocks held are unchanged, and take() keeps them within the high-water mark.
  free_.emplace(capacity, p);
  cached_ += capacity;
  return true;
}

}  // namespace ts::wl

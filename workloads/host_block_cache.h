#pragma once
// Host memory blocks the CPU device keeps for reuse instead of giving them back to the system. Why: a large block
// from malloc is a fresh mmap, and every one of its pages faults in on first touch; on the development VM a fault
// costs about 30 us (measured: ZeRO-3 on the mlp took 1,000 faults and 30 ms of system time per step, 10x data
// parallelism's step), and ZeRO-2/3 take and give back a layer's or a bucket's buffers every step. As PyTorch's
// caching allocators do, a released block waits for the next request it fits.
//
// The bound: the blocks held (in use and cached) never exceed the most that was in use at once, so the process's
// resident memory stays at the high-water mark of what the run needed: a new block beside cached ones it did not fit
// frees the smallest of them until the blocks are within it (a released block changes neither side). A request takes
// the smallest cached block that holds it, if that is at most twice its size (the rest of the block is idle memory);
// blocks under kMinBytes are left to malloc (its heap serves them without new pages).
#include <cstddef>
#include <map>
#include <unordered_map>

namespace ts::wl {

class HostBlockCache {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{64} << 10;

  HostBlockCache() = default;
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  // `bytes` zeroed bytes (at least kMinBytes), from a cached block or the system; nullptr when the system has none.
  void* take(std::size_t bytes);
  // A block take() handed out: cached within the bound, else freed. False when it is not one of take()'s.
  bool give(void* p);

  std::size_t cachedBytes() const { return cached_; }
  std::size_t heldBytes() const { return inUse_ + cached_; }
  std::size_t highWaterBytes() const { return highWater_; }

 private:
  std::multimap<std::size_t, void*> free_;         // capacity -> cached block
  std::unordered_map<void*, std::size_t> handed_;  // block in use -> its capacity
  std::size_t inUse_ = 0, cached_ = 0, highWater_ = 0;
};

}  // namespace ts::wl

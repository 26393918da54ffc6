#pragma once
// The order in which samples are visited: a fresh shuffle every epoch, computed, not stored.
//
// Global sample position p counts samples from the start of training (p = step · global batch + row).
// Epoch e = p / N visits every index of [0, N) exactly once, at offset p mod N, in a permutation keyed
// by (seed, e). The permutation is a 6-round Feistel network on the smallest even number of bits that
// covers N, with cycle walking (values ≥ N are permuted again until they fall in range; that is still a
// bijection of [0, N), and takes fewer than 4 rounds on average since the domain is under 4N).
// Being a pure function of (seed, p), it needs no state to checkpoint and costs O(1) memory for any N.
#include <cstdint>

namespace ts::data {

class SampleOrder {
 public:
  SampleOrder(std::uint64_t seed, std::int64_t size);  // size ≥ 1
  // The dataset index visited at global sample position `position` (≥ 0).
  std::int64_t index(std::int64_t position) const;
  std::int64_t size() const { return size_; }

 private:
  std::uint64_t feistel(std::uint64_t x, std::uint64_t epochKey) const;
  std::uint64_t seed_;
  std::int64_t size_;
  int halfBits_ = 1;
  std::uint64_t halfMask_ = 1;
};

}  // namespace ts::data

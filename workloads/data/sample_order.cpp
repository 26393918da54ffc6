#include "workloads/data/sample_order.h"

#include <bit>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/data/counter_rng.h"

namespace ts::data {

namespace {
constexpr int kRounds = 6;
}

SampleOrder::SampleOrder(std::uint64_t seed, std::int64_t size) : seed_(seed), size_(size) {
  if (size < 1) throw Error(fmt::format("a dataset of {} samples cannot be visited", size));
  const int bits = std::max(2, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(size - 1))));
  halfBits_ = (bits + 1) / 2;
  halfMask_ = (std::uint64_t{1} << halfBits_) - 1;
}

std::uint64_t SampleOrder::feistel(std::uint64_t x, std::uint64_t epochKey) const {
  std::uint64_t left = x >> halfBits_, right = x & halfMask_;
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t next = left ^ (mix64(right ^ mix64(epochKey + static_cast<std::uint64_t>(round))) & halfMask_);
    left = right;
    right = next;
  }
  return (left << halfBits_) | right;
}

std::int64_t SampleOrder::index(std::int64_t position) const {
  if (position < 0) throw Error(fmt::format("sample position {} is negative", position));
  const std::int64_t epoch = position / size_;
  const auto offset = static_cast<std::uint64_t>(position % size_);
  if (size_ == 1) return 0;
  const std::uint64_t key = hashKey(seed_, Stream::kSampleOrder, epoch);
  std::uint64_t x = feistel(offset, key);
  while (x >= static_cast<std::uint64_t>(size_)) x = feistel(x, key);
  return static_cast<std::int64_t>(x);
}

}  // namespace ts::data

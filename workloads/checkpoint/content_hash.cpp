#include "workloads/checkpoint/content_hash.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "workloads/data/counter_rng.h"

namespace ts::ckpt {

void ContentHash::word(std::uint64_t w) {
  // xor, rotate, odd multiply: each invertible in the state, so one changed word always changes the result.
  state_ = std::rotl(state_ ^ (w * 0x9e3779b97f4a7c15ULL), 29) * 0xbf58476d1ce4e5b9ULL;
}

void ContentHash::update(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  length_ += bytes;
  while (pendingBytes_ > 0 && pendingBytes_ < 8 && bytes > 0) {
    pending_[pendingBytes_++] = *p++;
    --bytes;
  }
  if (pendingBytes_ == 8) {
    std::uint64_t w;
    std::memcpy(&w, pending_, 8);
    word(w);
    pendingBytes_ = 0;
  }
  for (; bytes >= 8; bytes -= 8, p += 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    word(w);
  }
  std::memcpy(pending_ + pendingBytes_, p, bytes);
  pendingBytes_ += bytes;
}

std::uint64_t ContentHash::digest() const {
  ContentHash h = *this;
  if (h.pendingBytes_ > 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, h.pending_, h.pendingBytes_);
    h.word(w);
  }
  // The length tells apart inputs that differ only by trailing zero bytes.
  return data::mix64(h.state_ ^ data::mix64(h.length_));
}

std::string ContentHash::hex(std::uint64_t digest) { return fmt::format("{:016x}", digest); }

}  // namespace ts::ckpt

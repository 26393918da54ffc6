#pragma once
// A fast 64-bit hash of bytes, kept in a checkpoint's index.json for each piece (checkpoint.h) so that a file
// damaged after it was written (a flipped bit, a partial copy) is reported instead of loaded. Not a
// cryptographic hash: it detects accidents, not tampering. Every step is a bijection of the running
// state for a fixed input word, so two inputs that differ in exactly one 8-byte word always hash apart.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ts::ckpt {

class ContentHash {
 public:
  void update(const void* data, std::size_t bytes);  // in pieces of any size; the result does not depend on the split
  std::uint64_t digest() const;
  static std::string hex(std::uint64_t digest);  // 16 lowercase hex digits, as index.json stores it

 private:
  void word(std::uint64_t w);
  std::uint64_t state_ = 0x6a09e667f3bcc908ULL;
  std::uint64_t length_ = 0;
  unsigned char pending_[8] = {};
  std::size_t pendingBytes_ = 0;
};

}  // namespace ts::ckpt

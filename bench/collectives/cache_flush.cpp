#include "bench/collectives/cache_flush.h"

namespace ts {

void CacheFlush::run() {
  constexpr std::size_t kLine = 64;
  if (buffer_.empty()) buffer_.assign(bytes_, 0);
  // A read-modify-write of each line: the compiler may not drop it (the buffer outlives the call) nor turn it into
  // streaming stores (each line's byte depends on what it held).
  for (std::size_t i = 0; i < buffer_.size(); i += kLine) buffer_[i] = static_cast<unsigned char>(buffer_[i] + 1);
}

}  // namespace ts

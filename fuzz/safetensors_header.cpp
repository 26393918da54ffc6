// The safetensors reader (workloads/checkpoint/safetensors.h) on any bytes: a checkpoint or weights file
// may come from anywhere. What it accepts must describe tensors that lie inside the bytes, in order.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "workloads/checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ts::fuzz::onlyUsageErrors([&] {
    const auto contents = ts::ckpt::parseSafetensors({data, size}, "fuzz.safetensors");
    const auto* previousEnd = data;
    for (const auto& t : contents.tensors) {
      const auto* begin = static_cast<const std::uint8_t*>(t.data);
      ts::fuzz::check(begin >= previousEnd && begin + t.bytes() <= data + size, "a tensor lies outside the file or overlaps");
      volatile std::uint8_t sink = 0;
      if (t.bytes() > 0) sink = begin[0] ^ begin[t.bytes() - 1];  // what restore() copies must be readable
      (void)sink;
      previousEnd = begin + t.bytes();
    }
  });
}

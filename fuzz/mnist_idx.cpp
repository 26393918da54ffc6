// The MNIST IDX readers (workloads/data/mnist.h) on any bytes, as image file and as label file: a header
// they accept must describe exactly the bytes there are, so every sample read later is inside the file.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "workloads/data/mnist.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ts::fuzz::onlyUsageErrors([&] {
    const auto h = ts::data::checkIdxImages({data, size < 16 ? size : 16}, size, "fuzz-images-idx3-ubyte");
    ts::fuzz::check(16 + h.count * h.rows * h.cols == size, "accepted images do not fill the file exactly");
    volatile std::uint8_t last = data[size - 1];  // the last pixel of the last sample
    (void)last;
  });
  ts::fuzz::onlyUsageErrors([&] {
    const std::uint64_t n = ts::data::checkIdxLabels({data, size}, "fuzz-labels-idx1-ubyte");
    ts::fuzz::check(8 + n == size, "accepted labels do not fill the file exactly");
    for (std::uint64_t i = 0; i < n; ++i) ts::fuzz::check(data[8 + i] <= 9, "an accepted label is not a digit");
  });
  return 0;
}

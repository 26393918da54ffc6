// The CIFAR-10 batch reader (workloads/data/cifar10.h) on any bytes: what it accepts is a whole number of
// records, each labelled 0-9, so every sample read later is inside the file.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "workloads/data/cifar10.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ts::fuzz::onlyUsageErrors([&] {
    const std::int64_t records = ts::data::checkCifar10Batch({data, size}, "fuzz_batch.bin");
    const auto bytes = static_cast<std::size_t>(records * ts::data::Cifar10::kRecordBytes);
    ts::fuzz::check(records > 0 && bytes == size, "accepted records do not fill the file exactly");
    for (std::int64_t r = 0; r < records; ++r)
      ts::fuzz::check(data[r * ts::data::Cifar10::kRecordBytes] <= 9, "an accepted label is not a class 0-9");
  });
}

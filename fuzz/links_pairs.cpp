// The pairs file of `links --pairs FILE` (bench/links/links_options.h) on any text, for a run of four
// ranks on three hosts: every pair it accepts is two different ranks of the run.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/links/links_options.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> hosts = {"node-a", "node-b", "node-a", "node-c"};
  return ts::fuzz::onlyUsageErrors([&] {
    const auto pairs = ts::linkPairsFromText({reinterpret_cast<const char*>(data), size}, "fuzz-pairs", hosts);
    ts::fuzz::check(!pairs.empty(), "a pair file without pairs was accepted");
    for (const auto& [a, b] : pairs)
      ts::fuzz::check(a != b && a >= 0 && b >= 0 && a < 4 && b < 4, "a pair is not two different ranks of the run");
  });
}

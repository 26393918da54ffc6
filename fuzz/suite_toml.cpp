// The suite reader (bench/suite/suite.h) on any text: the TOML parser, then every step kind's option
// table as a suite reads it. A suite it accepts must give a config that can be recorded (the result file).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bench/suite/suite.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ts::fuzz::onlyUsageErrors([&] {
    const ts::Suite suite = ts::parseSuite({reinterpret_cast<const char*>(data), size}, "fuzz.toml");
    ts::fuzz::check(!suite.steps.empty(), "a suite without steps was accepted");
    (void)suite.config().dump();
  });
}

// The environment bootstrap's messages (comm/bootstrap_hello.h) on any bytes: what anyone who reaches
// MASTER_PORT can send process 0, and what whoever listens there can answer. A message is parsed only
// when whole, every prefix of it only asks for more (never past its end), and a parsed hello says the
// same bytes again when encoded.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/bootstrap_hello.h"
#include "fuzz/fuzz_support.h"

namespace {
template <class Message>
void prefixesAskForMore(std::string_view bytes, ts::hello::Parsed<Message> (*parse)(std::string_view)) {
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const auto p = parse(bytes.substr(0, n));
    ts::fuzz::check(p.state == ts::hello::Parsed<Message>::State::kNeedMore, "a prefix of a whole message was not incomplete");
    ts::fuzz::check(p.needed > n && p.needed <= bytes.size(), "a prefix asked to read past the message");
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace hello = ts::hello;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto h = hello::parseHello(bytes);
  ts::fuzz::check(h.needed <= hello::kMaxFrameBytes, "a hello asked for more than a frame");
  if (h.state == hello::Parsed<hello::Hello>::State::kComplete) {
    ts::fuzz::check(hello::encodeHello(h.message) == bytes, "a parsed hello does not encode to its bytes");
    prefixesAskForMore(bytes, &hello::parseHello);
    const std::vector<bool> joined = {true, false, true, false};
    (void)hello::refusal(h.message, 4, "token", joined);
  }
  const auto a = hello::parseAnswer(bytes);
  ts::fuzz::check(a.needed <= hello::kMaxFrameBytes, "an answer asked for more than a frame");
  if (a.state == hello::Parsed<hello::Answer>::State::kComplete) {
    prefixesAskForMore(bytes, &hello::parseAnswer);
    for (char c : a.message.reason) ts::fuzz::check(c >= 0x20 && c <= 0x7e, "a reason kept a byte that is not printable");
  }
  return 0;
}

#include "comm/bootstrap_hello.h"

#include <cstring>

#include <fmt/format.h>

namespace ts::hello {

namespace {
constexpr std::string_view kHelloMagic = "TSHELLO2";
constexpr std::string_view kAnswerMagic = "TSANSWR2";

void putU32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}
std::uint32_t getU32(std::string_view b, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

struct Frame {
  std::uint32_t a = 0, b = 0;
  std::string payload;
};

std::string encodeFrame(std::string_view magic, std::uint32_t a, std::uint32_t b, std::string_view payload) {
  std::string out(magic);
  putU32(out, a);
  putU32(out, b);
  const std::string_view bounded = payload.substr(0, kMaxFramePayload);
  putU32(out, static_cast<std::uint32_t>(bounded.size()));
  out.append(bounded);
  return out;
}

Parsed<Frame> parseFrame(std::string_view bytes, std::string_view magic, const char* what) {
  Parsed<Frame> p;
  // A wrong first byte is garbage at once: no need to wait for the rest of a header that will never be right.
  const std::size_t have = std::min(bytes.size(), magic.size());
  if (bytes.substr(0, have) != magic.substr(0, have)) {
    p.state = Parsed<Frame>::State::kInvalid;
    const std::size_t version = magic.size() - 1;
    const char theirs = have > version ? bytes[version] : '\0';
    p.why = have > version && bytes.substr(0, version) == magic.substr(0, version) && theirs >= '0' && theirs <= '9'
                ? fmt::format("a {} of trainscope's version {} of this exchange, and this one speaks version {}", what, theirs,
                              magic[version])
                : fmt::format("not a trainscope {} (it starts with other bytes)", what);
    return p;
  }
  if (bytes.size() < kHeaderBytes) return p;
  const std::uint32_t n = getU32(bytes, 16);
  if (n > kMaxFramePayload) {
    p.state = Parsed<Frame>::State::kInvalid;
    p.why = fmt::format("its {} claims {} bytes of payload, more than the {} allowed", what, n, kMaxFramePayload);
    return p;
  }
  p.needed = kHeaderBytes + n;
  if (bytes.size() < p.needed) return p;
  if (bytes.size() > p.needed) {
    p.state = Parsed<Frame>::State::kInvalid;
    p.why = fmt::format("it sent {} bytes after its {}", bytes.size() - p.needed, what);
    return p;
  }
  p.state = Parsed<Frame>::State::kComplete;
  p.message = {getU32(bytes, 8), getU32(bytes, 12), std::string(bytes.substr(kHeaderBytes, n))};
  return p;
}

template <typename Message>
Parsed<Message> carry(const Parsed<Frame>& f) {
  Parsed<Message> p;
  p.state = static_cast<typename Parsed<Message>::State>(f.state);
  p.needed = f.needed;
  p.why = f.why;
  return p;
}
}  // namespace

std::string encodeHello(const Hello& h) {
  return encodeFrame(kHelloMagic, static_cast<std::uint32_t>(h.rank), static_cast<std::uint32_t>(h.worldSize), h.token);
}

std::string encodeAnswer(const Answer& a) {
  return encodeFrame(kAnswerMagic, a.admitted ? 0 : 1, static_cast<std::uint32_t>(a.worldSize), a.reason);
}

Parsed<Hello> parseHello(std::string_view bytes) {
  const auto f = parseFrame(bytes, kHelloMagic, "hello");
  auto p = carry<Hello>(f);
  if (f.state == Parsed<Frame>::State::kComplete)
    p.message = {static_cast<std::int32_t>(f.message.a), static_cast<std::int32_t>(f.message.b), f.message.payload};
  return p;
}

Parsed<Answer> parseAnswer(std::string_view bytes) {
  const auto f = parseFrame(bytes, kAnswerMagic, "answer");
  auto p = carry<Answer>(f);
  if (f.state != Parsed<Frame>::State::kComplete) return p;
  if (f.message.a > 1) {
    p.state = Parsed<Answer>::State::kInvalid;
    p.why = fmt::format("its answer has status {}, neither admitted (0) nor refused (1)", f.message.a);
    return p;
  }
  p.message = {f.message.a == 0, static_cast<std::int32_t>(f.message.b), f.message.payload};
  // It is printed on this process's terminal: no control characters or escape sequences from a stranger.
  for (char& c : p.message.reason)
    if (c < 0x20 || c > 0x7e) c = '?';
  return p;
}

std::optional<std::string> refusal(const Hello& h, std::int32_t worldSize, std::string_view token,
                                   const std::vector<bool>& joined) {
  // Every byte compared whatever the first difference, so the time taken does not tell how much was right.
  unsigned char diff = h.token.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < h.token.size(); ++i)
    diff |= static_cast<unsigned char>(h.token[i] ^ (i < token.size() ? token[i] : 0));
  if (diff != 0) return std::string("wrong job token");
  if (h.worldSize != worldSize) return fmt::format("it has WORLD_SIZE={} but this job has WORLD_SIZE={}", h.worldSize, worldSize);
  if (h.rank < 1 || h.rank >= worldSize)
    return fmt::format("RANK={} is outside 1..{} (WORLD_SIZE={}; process 0 is the one listening)", h.rank, worldSize - 1,
                       worldSize);
  if (static_cast<std::size_t>(h.rank) < joined.size() && joined[static_cast<std::size_t>(h.rank)])
    return fmt::format("RANK={} has joined already (two processes with one RANK?)", h.rank);
  return std::nullopt;
}

}  // namespace ts::hello

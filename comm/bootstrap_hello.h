#pragma once
// What the environment bootstrap says on the wire, and process 0's judgement of a hello. Anyone who can
// reach MASTER_ADDR:MASTER_PORT can send these bytes, so the parser trusts nothing: every length is bounded
// before it is used, and bytes that are not a whole, well-formed message are refused, never waited on forever.
//
// Both messages are one frame, integers big-endian:
//   8 bytes  magic ("TSHELLO2": a process's hello; "TSANSWR2": process 0's answer); the last byte is the version
//            of the whole exchange (2: strings travel unpadded, bootstrap_tcp.h), so processes of two versions
//            never mistake each other's bytes
//   4 bytes  a   (hello: the sender's RANK;        answer: 0 admitted, 1 refused)
//   4 bytes  b   (hello: the sender's WORLD_SIZE;  answer: process 0's WORLD_SIZE)
//   4 bytes  n   the payload's length, at most kMaxFramePayload
//   n bytes  payload (hello: the job token; answer: why it was refused, empty when admitted)
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ts::hello {

constexpr std::size_t kHeaderBytes = 20;
constexpr std::size_t kMaxFramePayload = 256;  // tokens and reasons; TRAINSCOPE_JOB_TOKEN is held to it too
constexpr std::size_t kMaxFrameBytes = kHeaderBytes + kMaxFramePayload;

struct Hello {
  std::int32_t rank = 0;
  std::int32_t worldSize = 0;
  std::string token;
};

struct Answer {
  bool admitted = false;
  std::int32_t worldSize = 0;
  std::string reason;  // why refused; parseAnswer makes it printable ASCII (it comes from whoever listens)
};

// Where reading a message stands after the bytes received so far.
template <typename Message>
struct Parsed {
  enum class State { kNeedMore, kInvalid, kComplete } state = State::kNeedMore;
  std::size_t needed = kHeaderBytes;  // bytes the whole message takes, as far as known (read no further)
  std::string why;                    // kInvalid: what is wrong, for the log
  Message message;                    // kComplete
};

std::string encodeHello(const Hello& h);
std::string encodeAnswer(const Answer& a);
// `bytes` is everything received so far; more than one whole message is invalid (a process waits for the answer).
Parsed<Hello> parseHello(std::string_view bytes);
Parsed<Answer> parseAnswer(std::string_view bytes);

// Why process 0 refuses a well-formed hello, or nullopt to admit it. `joined[r]` says whether rank r has
// joined already. The token is checked first, so a stranger learns nothing about the job.
std::optional<std::string> refusal(const Hello& h, std::int32_t worldSize, std::string_view token,
                                   const std::vector<bool>& joined);

}  // namespace ts::hello

#pragma once
// Lifelines: every process of a multi-process run but process 0 keeps one TCP connection to process 0 (the hub)
// for the whole run, outside the run's own transport (MPI, NCCL, the bootstrap), so that process 0 learns at once
// how any process ends: it failed and said why, a signal stopped it, it said its own line and is ending the run, or
// its connection closed without a word (the kernel closes a dead process's sockets: kill -9, a crash). Process 0
// can then end the run with the one true line, and end every process itself where no launcher would
// (RANK/WORLD_SIZE). bench/failures/run_ending.h decides what each ending means.
//
// Frames are lines of text ('\n'-ended, at most kMaxFrameBytes):
//   process r -> 0:  "TSLIFE1 <key> <rank>" (first), then "fail <code> <line>", "stop own|peers <code> <line>",
//                    "said <code>", "bye"
//   process 0 -> r:  "end <code>"
// The key is process 0's random secret for the run, handed to the others through the bootstrap: a connection
// whose first line does not carry it is dropped (and so is one silent for 5 s).
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/liveness.h"

namespace ts {

// How the other processes reach the hub: published through the bootstrap at the start of the run.
struct LifelineCard {
  std::string host;
  std::vector<std::string> addresses;  // where the hub listens (one numeric address, as a BeaconCard's)
  int port = 0;
  std::string key;

  std::string encode() const;
  static LifelineCard decode(const std::string& text);  // Error when malformed
};

// How a process ended, as the hub learnt it.
enum class PeerEndKind {
  kFailed,          // "fail": it failed and said why
  kStopped,         // "stop own": a signal stopped it in its own work
  kStoppedWaiting,  // "stop peers": a signal stopped it while it waited for its peers (most likely a launcher ending the run)
  kSaid,            // "said": it printed its own line (a timeout it reports) and is ending the run
  kVanished,        // its connection closed without a word: killed, crashed, or its host is lost
  kClosed,          // "bye", then its connection closed: it finished
};

struct PeerEnd {
  int rank = 0;
  PeerEndKind kind = PeerEndKind::kVanished;
  int exitCode = 1;
  std::string line;         // what it said ("rank 1 of 4 (h): step 3: the loss is inf ..."); "" when it said nothing
  std::uint64_t order = 0;  // arrival order at the hub
};

namespace lifeline {

inline constexpr std::size_t kMaxFrameBytes = 4096;
inline constexpr double kHelloDeadlineS = 5.0;

// Each frame, '\n' included; a line is cut to fit and its line breaks become spaces.
std::string helloFrame(const std::string& key, int rank);
std::string failFrame(int exitCode, const std::string& line);
std::string stopFrame(bool waiting, int exitCode, const std::string& line);
std::string saidFrame(int exitCode);
std::string byeFrame();
std::string endFrame(int exitCode);

// Parsing one frame without its '\n'; nullopt when malformed.
struct Hello {
  std::string key;
  int rank = 0;
};
std::optional<Hello> parseHello(std::string_view frame);
struct Report {
  enum class Kind { kFail, kStopOwn, kStopWaiting, kSaid, kBye } kind = Kind::kFail;
  int exitCode = 0;
  std::string line;
};
std::optional<Report> parseReport(std::string_view frame);
std::optional<int> parseEnd(std::string_view frame);

}  // namespace lifeline

// Process 0's end: it listens (an ephemeral port of the address the run's processes reach each other by, never every
// interface) until every other process has said hello, and keeps each connection.
class LifelineHub {
 public:
  struct Handlers {
    std::function<void(const PeerEnd&)> onEnd;  // on the hub's thread: each process's end, once (a "bye" is no end)
    // On the hub's thread after each look at its connections; returns how long it may sleep before the next look
    // when nothing arrives, in ms (-1: until something arrives or wake() is called).
    std::function<int()> onTick;
  };
  // Listens on `address` (numeric: process 0's beacon's, comm/bootstrap_interface.h). Error when it cannot.
  LifelineHub(int worldSize, const std::string& host, const std::string& address, Handlers handlers);
  ~LifelineHub();
  LifelineHub(const LifelineHub&) = delete;
  LifelineHub& operator=(const LifelineHub&) = delete;

  const LifelineCard& card() const { return card_; }
  int joined() const;                 // how many processes have said hello
  std::vector<PeerEnd> ends() const;  // in arrival order
  // Returns once the hub's thread has read everything that had arrived when it was called, or after maxS.
  void settle(double maxS);
  // Tells every joined process to end with exitCode: best effort, never blocks. The second form is
  // async-signal-safe (for the last hub made).
  void endAll(int exitCode);
  static void endAllFromSignal(int exitCode);
  // Has the hub's thread look again now (onTick); async-signal-safe (the last hub made).
  static void wakeFromSignal();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  LifelineCard card_;
};

// Another process's end of its lifeline.
class Lifeline {
 public:
  struct Handlers {
    std::function<void(int exitCode)> onEnd;  // process 0 said "end" (on the lifeline's thread)
    std::function<void()> onHubGone;          // the connection closed without "end" (on the lifeline's thread)
  };
  // Connects to the hub at the addresses `self` reaches it by, within connectS, and says hello; Error when it cannot.
  Lifeline(const LifelineCard& hub, const BeaconCard& self, int rank, Handlers handlers, double connectS = 5.0);
  ~Lifeline();
  Lifeline(const Lifeline&) = delete;
  Lifeline& operator=(const Lifeline&) = delete;

  bool send(const std::string& frame);  // the whole frame, or false
  // Writes a frame from a signal handler (async-signal-safe; the last lifeline made): false when there is none or
  // the write failed.
  static bool sendFromSignal(const char* frame, std::size_t bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ts

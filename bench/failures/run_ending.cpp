#include "bench/failures/run_ending.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/heartbeat.h"
#include "base/json_text.h"
#include "base/stop_request.h"
#include "base/terminal_text.h"
#include "bench/failures/activity.h"
#include "comm/bootstrap.h"
#include "comm/liveness_lifeline.h"

namespace ts::ending {
namespace {

using Clock = std::chrono::steady_clock;

// Who ends the run: nobody yet, process 0's main thread (endRun), or whoever is printing the line now.
enum State : int { kRunning, kClaimed, kEnding };
std::atomic<int> g_state{kRunning};
std::atomic<bool> g_hubOpen{false};
std::atomic<bool> g_lifelineOpen{false};
std::atomic<bool> g_closing{false};

// Made once and never destroyed: the hub's and the lifeline's threads may end the process at any moment, down to
// its last instruction.
LifelineHub* g_hub = nullptr;
Lifeline* g_lifeline = nullptr;
int g_rank = 0;
int g_world = 1;
std::vector<std::string> g_hosts;  // by rank

// How long process 0's main thread has to end the run before the hub's thread does it. A failed process waits to
// be ended; a launcher ending the run does not: Open MPI's mpirun, once a process died, sends SIGCONT, then 1 s later
// SIGTERM to every process, and SIGKILL to all as soon as one of them exits (odls_base_sigkill_timeout).
constexpr double kAfterPeerFailureS = 3.0;
constexpr double kAfterPeerEndS = 0.5;
constexpr double kAfterSignalS = 0.5;
constexpr double kWhileEndingS = 10.0;
// How long the hub is given to read what has arrived before process 0 decides which end explains the run's.
constexpr double kSettleS = 0.3;
// How long a failed process waits for process 0 to end it before it says its own line.
constexpr double kWaitForEndS = 15.0;

// The hub's thread's view of the trouble so far.
std::mutex g_mu;
std::optional<Clock::time_point> g_endBy;  // when the hub's thread ends the run, unless it is ended before
std::optional<Clock::time_point> g_stopSeenAt, g_claimedAt;

// Another process: process 0 said "end" (its code), or its connection closed.
std::atomic<int> g_endCode{-1};
std::mutex g_spokeMu;
std::condition_variable g_spokeCv;
bool g_hubGone = false;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string peerWho(int rank) {
  const std::string host = rank >= 0 && rank < static_cast<int>(g_hosts.size()) ? g_hosts[rank] : "?";
  return fmt::format("rank {} of {} ({})", rank, g_world, host);
}

// What is known of a peer's end, as one phrase: its own line when it said one.
std::string peerSummary(const PeerEnd& e) {
  switch (e.kind) {
    case PeerEndKind::kVanished:
      return fmt::format("{} ended without a word (killed, or crashed)", peerWho(e.rank));
    case PeerEndKind::kSaid:
      return fmt::format("{} ended the run with its own line (a timeout)", peerWho(e.rank));
    case PeerEndKind::kClosed:
      return fmt::format("{} finished", peerWho(e.rank));
    case PeerEndKind::kFailed:
    case PeerEndKind::kStopped:
    case PeerEndKind::kStoppedWaiting:
      break;
  }
  return e.line;
}

int peerExitCode(const PeerEnd& e) { return e.kind == PeerEndKind::kVanished ? 1 : e.exitCode; }

// Which end explains the run's: a peer's failure first; then a peer that ended in its own work (stopped by a
// signal, reporting its own timeout, or vanished); then this process's own stop by a signal, if there was one; then a
// peer stopped while it waited for its peers (a launcher ending the run, most likely because of one of the others).
// Within a tier, the first to arrive. nullopt: this process's own stop explains it (or nothing is known).
std::optional<PeerEnd> cause(const std::vector<PeerEnd>& ends, bool ownStop) {
  auto tier = [](PeerEndKind k) {
    switch (k) {
      case PeerEndKind::kFailed:
        return 0;
      case PeerEndKind::kStopped:
      case PeerEndKind::kSaid:
      case PeerEndKind::kVanished:
        return 1;
      case PeerEndKind::kStoppedWaiting:
        return 3;
      case PeerEndKind::kClosed:
        break;
    }
    return 9;
  };
  std::optional<PeerEnd> best;
  for (const PeerEnd& e : ends)
    if (tier(e.kind) < 9 && (!best || tier(e.kind) < tier(best->kind))) best = e;  // ends are in arrival order
  if (!best || (ownStop && tier(best->kind) > 2)) return std::nullopt;
  return best;
}

// Process 0's line for a run ended by a peer's end: the peer's own line when it said one.
std::string lineFor(const PeerEnd& e) {
  const std::string doing = activity::current();
  switch (e.kind) {
    case PeerEndKind::kVanished:
      return fmt::format("{}: {}{}", activity::who(), doing.empty() ? "" : doing + ": ", peerSummary(e));
    case PeerEndKind::kSaid:
      return fmt::format("{}: ended while waiting for its peers{}: {}", activity::who(), doing.empty() ? "" : " in " + doing,
                         peerSummary(e));
    default:
      return peerSummary(e);
  }
}

// This process's own stop by a signal, as the hub's thread finds it (the main thread did not get to say it).
std::string ownStopLine(int sig) {
  const std::string doing = activity::current();
  const char* where = heartbeat::stall() == heartbeat::Stall::kPeers ? " while waiting for its peers in " : " during ";
  return fmt::format("{}: stopped by signal {}{}", activity::who(), sig, doing.empty() ? "" : where + doing);
}

// Prints the run's line, tells every other process to end, and ends this one (process 0).
[[noreturn]] void endWith(const std::string& line, int exitCode) {
  std::fflush(stdout);
  std::fprintf(stderr, "trainscope: error: %s\n", printable(line).c_str());  // a peer's words, its host's name
  std::fflush(stderr);
  activity::errorReported();
  g_hub->endAll(exitCode);
  std::_Exit(exitCode);
}

// The line and code of a run ended by something other than process 0's own error: a peer's end, or its own stop.
std::pair<std::string, int> verdict(const std::string& ownStop, int ownCode) {
  const int sig = stopRequested();
  const auto c = cause(g_hub->ends(), sig != 0);
  const std::string kept = activity::keptRecords();
  if (c) return {lineFor(*c) + "; ending all ranks" + kept, peerExitCode(*c)};
  return {ownStop + "; ending all ranks" + kept, ownCode};
}

// The hub's thread ends the run: the main thread did not in time.
void endFromHub(int from) {
  if (!g_state.compare_exchange_strong(from, kEnding)) return;
  const int sig = stopRequested();
  const auto [line, code] =
      verdict(sig ? ownStopLine(sig) : fmt::format("{}: a peer ended", activity::who()), sig ? 128 + sig : 1);
  endWith(line, code);
}

void onPeerEnd(const PeerEnd& e) {
  if (e.kind == PeerEndKind::kClosed) return;
  if (activity::errorWasReported() || g_state.load() == kEnding) return;  // this process is ending the run already
  const bool failed = e.kind == PeerEndKind::kFailed;
  notePeerFailure(peerSummary(e), peerExitCode(e),
                  failed                             ? PeerEndGrace::kShared
                  : e.kind == PeerEndKind::kVanished ? PeerEndGrace::kVanished
                                                     : PeerEndGrace::kNone);
  const auto by = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(failed ? kAfterPeerFailureS : kAfterPeerEndS));
  std::lock_guard lock(g_mu);
  if (!g_endBy || by < *g_endBy) g_endBy = by;
}

// Returns how long the hub may sleep: until the next deadline's look, else until something arrives (a peer's end,
// or the signal handler's wake).
int onHubTick() {
  constexpr int kLookMs = 50;
  const int state = g_state.load();
  if (state == kEnding || activity::errorWasReported()) return -1;
  std::unique_lock lock(g_mu);
  if (state == kClaimed) {
    if (g_claimedAt && secondsSince(*g_claimedAt) > kWhileEndingS) {
      lock.unlock();
      endFromHub(kClaimed);
    }
    return kLookMs;
  }
  if (stopRequested() && !g_stopSeenAt) g_stopSeenAt = Clock::now();
  const bool late = (g_stopSeenAt && secondsSince(*g_stopSeenAt) > kAfterSignalS) || (g_endBy && Clock::now() > *g_endBy);
  const bool pending = g_stopSeenAt || g_endBy;
  lock.unlock();
  if (late) endFromHub(kRunning);
  return pending ? kLookMs : -1;
}

void onEndFromHub(int exitCode) {
  // Process 0 has said the line: a signal from the launcher now ends this process quietly. It ends when process 0
  // has (so that a launcher names process 0 as the first to exit), or 2 s from now.
  activity::errorReported();
  g_endCode.store(exitCode);
  std::thread([exitCode] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::_Exit(exitCode);
  }).detach();
}

void onHubGone() {
  if (const int code = g_endCode.load(); code >= 0) std::_Exit(code);
  {
    std::lock_guard lock(g_spokeMu);
    g_hubGone = true;
  }
  g_spokeCv.notify_all();
  if (g_closing.load() || activity::errorWasReported()) return;  // the run is finishing, or this process reports its failure
  // Process 0 is gone: nobody is left to end the run, where no launcher would (RANK/WORLD_SIZE). The lowest of the
  // others says so; all end.
  activity::errorReported();
  if (g_rank == 1) {
    std::fprintf(stderr, "trainscope: error: %s: process 0 (%s) ended without a word (killed, or crashed); ending all ranks\n",
                 printable(activity::who()).c_str(), g_hosts.empty() ? "?" : printable(g_hosts[0]).c_str());
    std::fflush(stderr);
  }
  std::_Exit(1);
}

[[noreturn]] void sayItHere(const Failure& f) {
  std::fflush(stdout);
  std::fprintf(stderr, "trainscope: error: %s\n", printable(f.line).c_str());
  std::fflush(stderr);
  activity::errorReported();
  std::_Exit(f.exitCode);
}

// Another process: process 0 says its line and ends the run; if it cannot (gone), this process says it.
[[noreturn]] void tellProcess0(const Failure& f) {
  // Process 0 may have ended the run already, this failure being a consequence (its connection closed under a
  // bootstrap exchange): its "end" came, or is on its way over the lifeline.
  if (const int code = g_endCode.load(); code >= 0) std::_Exit(code);
  const std::string frame =
      f.kind == FailureKind::kStopped ? lifeline::stopFrame(false, f.exitCode, f.line) : lifeline::failFrame(f.exitCode, f.line);
  const bool told = g_lifeline->send(frame);
  if (told) activity::errorReported();
  std::unique_lock lock(g_spokeMu);
  g_spokeCv.wait_for(lock, std::chrono::duration<double>(told ? kWaitForEndS : kSettleS), [] { return g_hubGone; });
  lock.unlock();
  if (const int code = g_endCode.load(); code >= 0) std::_Exit(code);  // told to end, and process 0 is gone
  sayItHere(f);
}

}  // namespace

void openLifelines(Bootstrap& boot, const BeaconCard& mine) {
  if (boot.size() == 1 || g_hub || g_lifeline) return;
  g_rank = boot.rank();
  g_world = boot.size();
  std::unique_ptr<LifelineHub> hub;
  nlohmann::json card;  // process 0's hub, null when it could not open one
  if (boot.rank() == 0) {
    try {
      hub = std::make_unique<LifelineHub>(boot.size(), mine.host, mine.addresses.empty() ? "" : mine.addresses.front(),
                                          LifelineHub::Handlers{onPeerEnd, onHubTick});
      card = nlohmann::json::parse(hub->card().encode());
    } catch (const Error& e) {
      std::fprintf(stderr, "trainscope: warning: %s (a failure will end the run the launcher's way)\n", e.what());
    }
  }
  std::optional<LifelineCard> hubCard;
  for (const std::string& s : boot.allGatherStrings(jsonText(nlohmann::json{{"host", mine.host}, {"hub", card}}))) {
    const nlohmann::json j = nlohmann::json::parse(s);
    g_hosts.push_back(j.at("host").get<std::string>());
    if (!j.at("hub").is_null()) hubCard = LifelineCard::decode(jsonText(j.at("hub")));
  }
  if (hub) {
    g_hub = hub.release();
    g_hubOpen.store(true);
    return;
  }
  if (!hubCard) return;
  try {
    g_lifeline = new Lifeline(*hubCard, mine, boot.rank(), Lifeline::Handlers{onEndFromHub, onHubGone});
    g_lifelineOpen.store(true);
  } catch (const Error& e) {
    std::fprintf(stderr, "trainscope: warning: %s: %s (a failure here will end the run the launcher's way)\n",
                 activity::who().c_str(), e.what());
  }
}

bool active() { return g_hubOpen.load() || g_lifelineOpen.load(); }

void closing() {
  if (g_closing.exchange(true)) return;
  if (g_lifeline) (void)g_lifeline->send(lifeline::byeFrame());
}

void endRun(const Failure& f) {
  if (g_lifelineOpen.load()) tellProcess0(f);
  if (!g_hubOpen.load()) return;
  int state = kRunning;
  if (!g_state.compare_exchange_strong(state, kClaimed) && state == kEnding)
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the hub's thread is ending the run
  {
    std::lock_guard lock(g_mu);
    g_claimedAt = Clock::now();
  }
  LifelineHub::wakeFromSignal();  // its deadline while this thread ends the run
  std::string line = f.line;
  int code = f.exitCode;
  if (f.kind != FailureKind::kError) {  // this process's own error is the run's; anything else may have a cause elsewhere
    g_hub->settle(kSettleS);
    std::tie(line, code) = verdict(f.line, f.exitCode);
  }
  state = kClaimed;
  if (!g_state.compare_exchange_strong(state, kEnding))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  endWith(line, code);
}

void tellTimeoutReported(int exitCode) {
  if (g_hub) g_hub->endAll(exitCode);
  if (g_lifeline) (void)g_lifeline->send(lifeline::saidFrame(exitCode));
}

bool hubDefersSignals() { return g_hubOpen.load() && stopRequested() == 0; }

void wakeHubFromSignal() { LifelineHub::wakeFromSignal(); }

bool tellStopFromSignal(int exitCode, bool waiting, const char* line, std::size_t length) {
  if (!g_lifelineOpen.load()) return false;
  char frame[lifeline::kMaxFrameBytes];
  std::size_t n = 0;
  auto put = [&](const char* s, std::size_t k) {
    for (std::size_t i = 0; i < k && n + 1 < sizeof(frame); ++i) frame[n++] = s[i] == '\n' ? ' ' : s[i];
  };
  put("stop ", 5);
  put(waiting ? "peers " : "own ", waiting ? 6 : 4);
  char digits[16];
  int i = sizeof(digits);
  for (unsigned v = static_cast<unsigned>(exitCode); i > 0;) {
    digits[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
    if (v == 0) break;
  }
  put(digits + i, sizeof(digits) - static_cast<std::size_t>(i));
  put(" ", 1);
  put(line, length);
  frame[n++] = '\n';
  return Lifeline::sendFromSignal(frame, n);
}

void endPeersFromSignal(int exitCode) { LifelineHub::endAllFromSignal(exitCode); }

}  // namespace ts::ending

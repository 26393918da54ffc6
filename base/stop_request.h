#pragma once
// A stop asked for by a signal (mpirun or srun ending the run because another rank failed, or the user's
// Ctrl-C), where the run has asked to stop gracefully rather than at once: the signal handler only
// records it, and the loops that wait on other ranks check it, so the results measured so far are
// written before the process exits. A second signal ends the process at once.
//
// The same waits give up when a peer process has failed and said so over its lifeline to process 0
// (bench/failures/run_ending.h): its collective will never complete, and process 0 ends the run with its line.
#include <string>
#include <string_view>

#include "base/error.h"

namespace ts {

void requestStop(int signal);  // async-signal-safe
int stopRequested();           // the signal, or 0

// A stop by a signal, as the loop that noticed it throws it: the run ends with exit code 128 + signal.
class StoppedBySignal : public Error {
 public:
  StoppedBySignal(int signal, const std::string& what) : Error(what), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// What a wait for other ranks throws once a stop was requested: the launcher is ending the run, most likely
// because another rank failed and said why. Only process 0 reports it (bench/main.cpp); the others have
// nothing to add.
class StoppedWhileWaiting : public StoppedBySignal {
 public:
  explicit StoppedWhileWaiting(const std::string& what) : StoppedBySignal(stopRequested(), what) {}
};

// How long the waits for peers go on after a peer's end is noted, by what is known of it.
enum class PeerEndGrace {
  kShared,    // a peer's error, which every process may meet at the same point: a moment to meet it here too
  kVanished,  // a peer that ended without a word: what it sent before may still complete the exchange waited in
  kNone,      // a peer that said it ends (its own timeout, a signal): at once
};
// A peer's failure, noted by process 0's lifeline hub: `line` is what the peer said (or what is known of its end),
// `exitCode` the code the run ends with.
void notePeerFailure(const std::string& line, int exitCode, PeerEndGrace grace);
bool peerFailureNoted();  // one atomic load
// What the waits for peers throw once a peer failure is noted: that peer's line.
class PeerFailed : public Error {
 public:
  PeerFailed(const std::string& line, int exitCode) : Error(line), exitCode_(exitCode) {}
  int exitCode() const { return exitCode_; }

 private:
  int exitCode_;
};

// Called by every wait for peers between its polls: throws PeerFailed once a peer's failure is noted (a failure that
// may be shared, half a second later: the wait's own exchange may still complete, and the failure is then this
// process's own), else StoppedWhileWaiting (naming `what`, the operation, and its size) once a stop was requested.
void checkStopWhileWaiting(std::string_view what, std::size_t bytes);

}  // namespace ts

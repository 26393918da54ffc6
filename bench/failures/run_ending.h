#pragma once
// How a run of several processes ends when something fails, on one process or on all of them: every process ends
// within seconds, process 0 prints the one true line, the records are kept, nobody waits for a timeout and no
// healthy rank is blamed (docs/reliability.md, "Failures end the run in seconds").
//
// Before, a failure left each process to end on its own: one that failed went on to MPI_Finalize (a fence with
// every process) or to the final gathers while the others waited inside a collective for it, and the run hung
// until the watchdog's 2 x --timeout blamed a healthy rank; a process killed with kill -9 ended the run with no
// line at all. Now each process but process 0 holds a lifeline to process 0 (comm/liveness_lifeline.h):
//   - a process that fails tells process 0 its line and waits to be ended;
//   - a process stopped by a signal says so from its handler, and exits;
//   - a process that dies says nothing, and the kernel closes its lifeline;
//   - process 0 learns each at once: its waits for peers stop (base/stop_request.h, PeerFailed), it keeps what it
//     measured, prints the line (its own failure's, else the first peer's), tells every process to end, and ends.
// When process 0's main thread cannot (it is in its own long work, or blocked), the hub's thread ends the run
// itself: 3 s after a peer's end, 0.5 s after a signal (mpirun's SIGKILL follows its SIGTERM by 1 s).
#include <string>

namespace ts {

class Bootstrap;
struct BeaconCard;

namespace ending {

// Collective, at the start of a multi-process run (RunSession): process 0 opens its hub and the others connect to
// it. A process that cannot warns once and goes on without (then its failures end the run the old way).
void openLifelines(Bootstrap& boot, const BeaconCard& mine);
// Whether this process holds a lifeline (or is the hub).
bool active();
// The run is finishing normally (RunSession::finish): a process's end from now on is no failure.
void closing();

// This process's failure, as bench/main.cpp reports it.
enum class FailureKind {
  kError,    // it failed: an error, bad input found late, an internal error
  kStopped,  // a signal stopped it (a wait for peers or the training loop noticed, after the handler asked to stop)
  kPeer,     // a peer failed or ended (process 0 only: PeerFailed)
};
struct Failure {
  FailureKind kind = FailureKind::kError;
  std::string line;  // "rank 1 of 4 (host): what" (own failures); the peer's line (kPeer)
  int exitCode = 1;
};
// Ends this process for its failure when it holds a lifeline (does not return); returns at once otherwise.
void endRun(const Failure& f);

// The watchdog has printed this process's timeout line and ends the run: process 0 tells the others to end, another
// process tells process 0 that it said why (so that process 0 does not blame it as gone).
void tellTimeoutReported(int exitCode);

// For the signal handler (bench/failures/activity.cpp), async-signal-safe:
// process 0 with a hub: the first SIGTERM/SIGINT/SIGHUP only asks to stop; the run ends through endRun or the hub.
bool hubDefersSignals();
// Process 0, having asked to stop: the hub looks at once (its deadline for the main thread starts).
void wakeHubFromSignal();
// Another process: sends "stop" with the handler's line (without "trainscope: error: " and '\n'); false when it
// has no lifeline or the frame could not be sent (then it prints its own line).
bool tellStopFromSignal(int exitCode, bool waiting, const char* line, std::size_t length);
// Process 0, ending at once on a second signal: tells the others to end.
void endPeersFromSignal(int exitCode);

}  // namespace ending
}  // namespace ts

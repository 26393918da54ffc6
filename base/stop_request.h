#pragma once
// A stop asked for by a signal (mpirun or srun ending the run because another rank failed, or the user's
// Ctrl-C), where the run has asked to stop gracefully rather than at once: the signal handler only
// records it, and the loops that wait on other ranks check it, so the results measured so far are
// written before the process exits. A second signal ends the process at once.
#include "base/error.h"

namespace ts {

void requestStop(int signal);  // async-signal-safe
int stopRequested();           // the signal, or 0

// What a wait for other ranks throws once a stop was requested: the launcher is ending the run, most likely
// because another rank failed and said why. Only process 0 reports it (bench/main.cpp); the others have
// nothing to add.
class StoppedWhileWaiting : public Error {
 public:
  using Error::Error;
};

}  // namespace ts

#pragma once
// A stop asked for by a signal (mpirun or srun ending the run because another rank failed, or the user's
// Ctrl-C), where the run has asked to stop gracefully rather than at once: the signal handler only
// records it, and the loops that wait on other ranks check it, so the results measured so far are
// written before the process exits. A second signal ends the process at once.
namespace ts {

void requestStop(int signal);  // async-signal-safe
int stopRequested();           // the signal, or 0

}  // namespace ts

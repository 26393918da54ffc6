#pragma once
// What this process is doing now, kept pre-formatted so that a signal handler can say it: when mpirun,
// srun or a user stops the run (SIGTERM, SIGINT, SIGHUP), each rank prints one line naming the operation
// it was in and where the records measured so far are, then exits 128+signal.
#include <string>

namespace ts::activity {

void setIdentity(int rank, int worldProcesses, const std::string& host);
void setStreamPath(const std::string& jsonlPath);  // "" when not writing one
void set(const std::string& what);                 // e.g. "all_reduce 4 MiB float32 sum out-of-place"
std::string current();
// "rank 1 of 4 (host-a)"
std::string who();
void installSignalHandlers();
// While on, the first SIGTERM/SIGINT/SIGHUP only records a stop request (base/stop_request.h) for the
// waiting loops to act on, so that the caller can keep what it measured; a second one ends at once.
void setGracefulStop(bool on);
// The run's error has been printed (by this process or, agreed, by process 0): a signal from the
// launcher ending the other processes now exits without a second line.
void errorReported();

}  // namespace ts::activity

#pragma once
// What this process is doing now, kept pre-formatted so that a signal handler can say it: when mpirun,
// srun or a user stops the run (SIGTERM, SIGINT, SIGHUP), each rank prints one line naming the operation
// it was in and, on the process that writes the stream, what it kept there, then exits 128+signal.
#include <string>

namespace ts::activity {

void setIdentity(int rank, int worldProcesses, const std::string& host);
// Where the run's records stream ("" when not writing one), and whether this process writes them (process 0).
void setStream(const std::string& jsonlPath, bool writer);
// The stream holds `records` records now (async-signal-safe to read; the result writer counts). A record's write to the stream
// begins (ResultWriter::stream); recordsStreamed ends it with the count. The writing thread holds the stopping signals back, but
// another thread may take one meanwhile (a signal mask is per thread): its line then waits for the write to end, and a write that
// would begin after the line's count never does.
void streamWriteStarts();
void recordsStreamed(long records);
// What the stream kept, as the end of an error line: "; records measured so far are in X.jsonl (N records)",
// or, when nothing was measured yet, "; nothing was measured, so nothing was kept" (and the empty stream is
// removed). "" on the processes that do not write the stream, or without one.
std::string keptRecords();
void set(const std::string& what);  // e.g. "all_reduce 4 MiB float32 sum out-of-place"
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
bool errorWasReported();

}  // namespace ts::activity

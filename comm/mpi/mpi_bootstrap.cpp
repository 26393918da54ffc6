#include "comm/mpi/mpi_bootstrap.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "base/heartbeat.h"
#include "comm/mpi/mpi_check.h"

namespace ts {

MpiBootstrap::MpiBootstrap() {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    // FUNNELED, as training programs ask for: MPI_THREAD_MULTIPLE makes Open MPI take locks on every call,
    // which adds ~0.3 us to small-message latency, a cost the users' programs would not pay. The watchdog
    // thread's MPI_Abort is the one call made off the main thread; Open MPI honours it (tested), and
    // abortAll falls back to _Exit, after which the launcher ends the other ranks.
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &threadLevel_));
  }
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &control_));
  MPI_CHECK(MPI_Comm_rank(control_, &rank_));
  MPI_CHECK(MPI_Comm_size(control_, &size_));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(control_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &localRank_));
  MPI_CHECK(MPI_Comm_free(&node));
}

MpiBootstrap::~MpiBootstrap() {
  // Destructors must not throw: failures at shutdown are not worth more than the results already written.
  if (control_ != MPI_COMM_NULL) MPI_Comm_free(&control_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiBootstrap::allGather(const void* in, void* out, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) throw Error("internal: control-plane message over 2 GiB");
  const heartbeat::WaitingForPeers waiting;
  MPI_CHECK(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, control_));
}

void MpiBootstrap::barrier() {
  const heartbeat::WaitingForPeers waiting;
  MPI_CHECK(MPI_Barrier(control_));
}

void MpiBootstrap::quietBarrier() {
  const heartbeat::WaitingForPeers waiting;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibarrier(control_, &req));
  for (int done = 0;;) {
    MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void MpiBootstrap::abortAll(int exitCode) {
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);  // MPI_Abort does not return; this is for an MPI that does
}

void abortMpiWorldIfInitialized(int exitCode) {
  int initialized = 0;
  int finalized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS || !initialized) return;
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  MPI_Abort(MPI_COMM_WORLD, exitCode);
}

std::string mpiLibraryVersion() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "unknown";
  std::string s(buf, static_cast<std::size_t>(len));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace ts

#include "comm/mpi/mpi_bootstrap.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <thread>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "comm/mpi/mpi_check.h"

namespace ts {

MpiBootstrap::MpiBootstrap() {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    // SINGLE, as OSU's benchmarks initialise MPI: Open MPI 4.1 turns its thread locks on for any level above
    // SINGLE (FUNNELED included, not only MULTIPLE), which cost every small message ~0.2 us (issue #40: an
    // 8-byte all_reduce in the same bare loop, 0.26-0.32 us under SINGLE against 0.43-0.47 under FUNNELED, 4 of
    // 4 interleaved pairs). Only the main thread calls MPI; the watchdog thread's MPI_Abort is the one call
    // made off it, at the end of a run that timed out: Open MPI honours it (tested), and abortAll falls back to
    // _Exit, after which the launcher ends the other ranks.
    // Open MPI's nonblocking all-reduce (libnbc) decides on a binomial reduce-then-broadcast for few ranks, twice
    // the blocking all-reduce a sweep times: the training's gradient all-reduce is nonblocking (a rank blocked in
    // MPI could not notice a failed peer) and paid it (issue #40, 2 ranks, a bare loop: 540 KB 119-139 us against
    // the blocking 68-81; 4 MiB 2153 against 707). Its ring takes 78 and 840 (+0.2 us at 8 bytes, which the
    // training's all-reduces are not). Unless the user chose one: the ring; the run's environment records it.
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &threadLevel_));
  }
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &control_));
  MPI_CHECK(MPI_Comm_rank(control_, &rank_));
  MPI_CHECK(MPI_Comm_size(control_, &size_));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(control_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &localRank_));
  MPI_CHECK(MPI_Comm_size(node, &localSize_));
  MPI_CHECK(MPI_Comm_free(&node));
}

MpiBootstrap::~MpiBootstrap() {
  // Destructors must not throw: failures at shutdown are not worth more than the results already written. A run
  // that failed without every process agreeing (RunSession abandons it) ends without MPI_Finalize, whose fence
  // would wait for processes that are inside a collective, or gone.
  if (abandoned_ || (std::uncaught_exceptions() > 0 && (stopRequested() || peerFailureNoted()))) return;
  if (control_ != MPI_COMM_NULL) MPI_Comm_free(&control_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

namespace {
// Waits for a control-plane exchange by polling, so that a peer's failure or a stop ends the wait (as the
// measured collectives' waits do): a blocking MPI_Allgather would wait for a peer that never comes. `quiet`
// sleeps between polls (a process standing by while another measures on its host); otherwise it yields and
// sleeps only once the wait is long.
void waitPolling(MPI_Request& req, const char* what, std::size_t bytes, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    checkStopWhileWaiting(what, bytes);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (quiet)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    else if (polls > 64 && waited >= 0.05)
      std::this_thread::sleep_for(std::chrono::microseconds(waited < 1 ? 50 : 500));
    else
      std::this_thread::yield();
  }
}
}  // namespace

void MpiBootstrap::allGather(const void* in, void* out, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) throw Error("internal: control-plane message over 2 GiB");
  const heartbeat::WaitingForPeers waiting;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, control_, &req));
  waitPolling(req, "a control-plane exchange", bytes * static_cast<std::size_t>(size_), false);
}

void MpiBootstrap::barrier() {
  const heartbeat::WaitingForPeers waiting;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibarrier(control_, &req));
  waitPolling(req, "a barrier", 0, false);
}

void MpiBootstrap::quietBarrier() {
  const heartbeat::WaitingForPeers waiting;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibarrier(control_, &req));
  waitPolling(req, "a barrier", 0, true);
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

bool abandoningMpi() { return std::uncaught_exceptions() > 0 || stopRequested() != 0 || peerFailureNoted(); }

std::string mpiLibraryVersion() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "unknown";
  std::string s(buf, static_cast<std::size_t>(len));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace ts

#include "comm/mpi/mpi_communicator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "comm/collectives/collective.h"
#include "comm/mpi/mpi_bootstrap.h"
#include "comm/mpi/mpi_check.h"

namespace ts {

MpiCommunicator::MpiCommunicator() {
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::MpiCommunicator(MPI_Comm owned) : comm_(owned) {
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(comm_, color, key, &sub));
  return std::make_unique<MpiCommunicator>(sub);
}

namespace {

// An MPI nonblocking collective; `finish` runs once it completes (the root's copy of an out-of-place
// broadcast). Waiting polls MPI_Test, yielding between polls and sleeping only once the wait is long, so a
// rank that waits does not take a core from a peer on an oversubscribed host.
class MpiPending final : public PendingCollective {
 public:
  MpiPending(std::string_view what, std::size_t bytes, int rank) : what_(what), bytes_(bytes), rank_(rank) {}
  std::function<void()>& finish() { return finish_; }
  ~MpiPending() override {
    // Never leave MPI writing freed memory; except on the way out of a failed run (a peer failed, a signal came,
    // an exception unwinds), where the others may never join and the wait would not return: the process makes no
    // further MPI call that could progress it (comm/mpi/mpi_bootstrap.h, abandon) and ends.
    if (!done_ && request_.handle != MPI_REQUEST_NULL && !abandoningMpi()) MPI_Wait(&request_.handle, MPI_STATUS_IGNORE);
  }
  MpiRequest& request() { return request_; }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    MPI_CHECK(MPI_Test(&request_.handle, &flag, MPI_STATUS_IGNORE));
    if (flag) {
      done_ = true;
      if (finish_) finish_();
    }
    return done_;
  }
  void wait(double timeoutS) override {
    // No heartbeat while waiting: a stall here is the peers' (heartbeat::WaitingForPeers), so the watchdog
    // leaves the rank that is stuck in its own work to report it.
    const heartbeat::WaitingForPeers waiting;
    const auto t0 = std::chrono::steady_clock::now();
    for (int polls = 0; !test(); ++polls) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // A nonblocking collective advances only inside MPI calls: Open MPI's Ireduce and Ibcast of a few MiB
      // are schedules of many rounds, one per test, so sleeping 20 us between polls stretched a parameter
      // server's reduce + broadcast many times over (issue #21: sync ps, mlp small, dp 2, 72 -> 4.9 ms per step
      // in the train records before and after). Yield instead (a peer waiting for a core gets it), and sleep
      // only in waits long enough that the peers are plainly elsewhere.
      if (polls > 64) {
        if (waited < 0.05)
          std::this_thread::yield();
        else
          std::this_thread::sleep_for(std::chrono::microseconds(waited < 1 ? 50 : 500));
      }
      if (timeoutS > 0 && waited > timeoutS)
        throw errorInContext(
            fmt::format("timeout: {} of {} bytes on rank {} waited {:.1f} s for its peers", what_, bytes_, rank_, waited));
      checkStopWhileWaiting(what_, bytes_);
    }
  }

 private:
  std::string_view what_;  // a collective's name or "send"/"recv": static strings
  std::size_t bytes_;
  int rank_;
  std::function<void()> finish_;
  MpiRequest request_;
  bool done_ = false;
};

}  // namespace

void MpiCommunicator::run(int, const CollectiveCall& c) {
  const heartbeat::WaitingForPeers waiting;
  c.collective->runMpi(call(), c);
  c.collective->finishMpi(call(), c);
}

std::unique_ptr<PendingCollective> MpiCommunicator::start(int l, const CollectiveCall& c) {
  if (!c.collective->startsOnMpi()) return Communicator::start(l, c);
  auto p = std::make_unique<MpiPending>(c.collective->name(), c.count * dtypeSize(c.dtype), rank_);
  c.collective->startMpi(call(), c, p->request(), p->finish());
  return p;
}

std::unique_ptr<PendingCollective> MpiCommunicator::startSend(int, const void* buf, std::size_t count, DType t, int peer,
                                                              int tag) {
  auto p = std::make_unique<MpiPending>("send", count * dtypeSize(t), rank_);
  MPI_CHECK(MPI_Isend(buf, mpiCount(count), mpiType(t), peer, tag, comm_, &p->request().handle));
  return p;
}

std::unique_ptr<PendingCollective> MpiCommunicator::startRecv(int, void* buf, std::size_t count, DType t, int peer, int tag) {
  auto p = std::make_unique<MpiPending>("recv", count * dtypeSize(t), rank_);
  MPI_CHECK(MPI_Irecv(buf, mpiCount(count), mpiType(t), peer, tag, comm_, &p->request().handle));
  return p;
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_NULL && !abandoningMpi()) MPI_Comm_free(&comm_);
}

bool MpiCommunicator::supportsInPlace(const Collective& op) const { return op.mpiInPlace(); }

bool MpiCommunicator::supports(const Collective& op, DType t, RedOp, std::string* why) const {
  if (!op.runsOn(BackendKind::kMpi)) {
    if (why) *why = op.whyNotOn(BackendKind::kMpi);
    return false;
  }
  if (op.reduces() && (t == DType::kFloat16 || t == DType::kBFloat16)) {
    if (why)
      *why = fmt::format("the mpi backend cannot reduce {} (MPI has no 16-bit float arithmetic); use float32, or --backend nccl",
                         dtypeName(t));
    return false;
  }
  return true;
}

void* MpiCommunicator::allocate(int, std::size_t bytes) {
  // Page-aligned and touched, so the first timed iteration does not pay for page faults.
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) throw errorInContext(fmt::format("out of host memory allocating {} bytes", bytes));
  std::memset(p, 0, bytes);
  return p;
}
void MpiCommunicator::release(int, void* p) { std::free(p); }
void MpiCommunicator::copyIn(int, void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void MpiCommunicator::copyOut(int, void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

namespace {

// One timed operation of the loop, as `issue` says: the blocking call, or its nonblocking form waited for at once
// (MPI_Wait: what OSU's osu_iallreduce times, and what training's wait ends in). Returns the local work left for
// after the clock: finishMpi's for the blocking call, the request's `finish` for the nonblocking one (the same copy
// of an out-of-place broadcast; for the nonblocking form also an in-place reduce_scatter's move and an average's
// division, which runMpi does inside its call), so that the clock encloses the MPI calls alone either way.
class TimedCall {
 public:
  TimedCall(const MpiCall& m, const CollectiveCall& c, IssueKind issue) : m_(m), c_(c), issue_(issue) {
    if (issue == IssueKind::kNonblocking && !c.collective->startsOnMpi())
      throw Error(fmt::format("internal: {} has no nonblocking MPI call to time", c.collective->name()));
  }
  void run() {
    if (issue_ == IssueKind::kBlocking) return c_.collective->runMpi(m_, c_);
    finish_ = nullptr;
    c_.collective->startMpi(m_, c_, request_, finish_);
    MPI_CHECK(MPI_Wait(&request_.handle, MPI_STATUS_IGNORE));
  }
  void finish() const {
    if (issue_ == IssueKind::kBlocking)
      c_.collective->finishMpi(m_, c_);
    else if (finish_)
      finish_();
  }

 private:
  const MpiCall& m_;
  const CollectiveCall& c_;
  IssueKind issue_;
  MpiRequest request_;
  std::function<void()> finish_;
};

}  // namespace

TimedBatch MpiCommunicator::timeBatch(int iters, int, const TimedOp& op) {
  // OSU's loop: each iteration starts from a barrier (not timed), so every sample is one whole operation, and
  // the clock reads enclose the MPI call alone. Everything else the harness does per iteration falls outside:
  // the call is built before the loop (no virtual dispatch through the communicator; inside, only the nonblocking
  // form of an op with local work to finish sets its closure, as Communicator::start does), the
  // watchdog's "waiting for peers" mark spans barrier and call, and the sample's store, the heartbeat and the
  // op's local finish (TimedCall::finish) come after the second read. The caller takes the slowest rank's
  // time per iteration, after the loop.
  if (op.calls.size() > 1) throw Error("internal: the MPI communicator drives one rank per process");
  const MpiCall mc = call();
  std::optional<TimedCall> c;
  if (!op.calls.empty()) c.emplace(mc, op.calls.front(), op.issue);
  TimedBatch out;
  out.opUs.resize(static_cast<std::size_t>(std::max(iters, 0)));
  double total = 0;
  for (int i = 0; i < iters; ++i) {
    if (op.beforeEach) op.beforeEach();
    std::chrono::steady_clock::time_point t0, t1;
    {
      const heartbeat::WaitingForPeers waiting;
      MPI_CHECK(MPI_Barrier(comm_));
      t0 = std::chrono::steady_clock::now();
      if (c) c->run();
      t1 = std::chrono::steady_clock::now();
    }
    if (c) c->finish();
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
    out.opUs[static_cast<std::size_t>(i)] = us;
    total += us;
    heartbeat::beat();
  }
  out.hostUsPerOp = iters > 0 ? total / iters : 0;
  return out;
}

// MPI has no abort for one communicator: MPI_Abort ends the whole job, which Bootstrap::abortAll does
// with the right exit code. Nothing to release first.
void MpiCommunicator::abort() {}

}  // namespace ts

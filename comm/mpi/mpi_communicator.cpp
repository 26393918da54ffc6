#include "comm/mpi/mpi_communicator.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "comm/collectives/collective.h"
#include "comm/mpi/mpi_check.h"

namespace ts {
namespace {

// float16/bfloat16 travel as 16-bit words; MPI has no arithmetic for them.
MPI_Datatype mpiType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt8:
      return MPI_INT8_T;
    case DType::kUInt8:
      return MPI_UINT8_T;
    case DType::kFloat16:
    case DType::kBFloat16:
      return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// MPI has no average: it is a sum followed by a division by the world size (part of the timed op, as in NCCL).
MPI_Op mpiOp(RedOp op) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return MPI_SUM;
    case RedOp::kProd:
      return MPI_PROD;
    case RedOp::kMin:
      return MPI_MIN;
    case RedOp::kMax:
      return MPI_MAX;
  }
  return MPI_SUM;
}

template <typename T>
void divideAll(void* p, std::size_t n, int by) {
  auto* x = static_cast<T*>(p);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(x[i] / static_cast<T>(by));
}

void finishAverage(void* p, std::size_t n, DType t, RedOp op, int worldSize) {
  if (op != RedOp::kAvg) return;
  switch (t) {
    case DType::kFloat32:
      divideAll<float>(p, n, worldSize);
      break;
    case DType::kFloat64:
      divideAll<double>(p, n, worldSize);
      break;
    case DType::kInt32:
      divideAll<std::int32_t>(p, n, worldSize);
      break;
    case DType::kInt8:
      divideAll<std::int8_t>(p, n, worldSize);
      break;
    case DType::kUInt8:
      divideAll<std::uint8_t>(p, n, worldSize);
      break;
    default:
      break;  // rejected by supports()
  }
}

// MPI counts are int; larger messages would need MPI 4 large-count calls.
int mpiCount(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw errorInContext(fmt::format("{} elements exceed the MPI count limit of {} per call", n, INT_MAX));
  return static_cast<int>(n);
}

const void* inPlaceOr(const void* send, const void* at) { return send == at ? MPI_IN_PLACE : send; }

char* offsetBytes(void* p, std::size_t elems, DType t) { return static_cast<char*>(p) + elems * dtypeSize(t); }

}  // namespace

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
// broadcast). Waiting polls MPI_Test, sleeping between polls once the op is not quick, so a rank that
// waits does not take a core from a peer on an oversubscribed host.
class MpiPending final : public PendingCollective {
 public:
  MpiPending(std::string_view what, std::size_t bytes, int rank, std::function<void()> finish)
      : what_(what), bytes_(bytes), rank_(rank), finish_(std::move(finish)) {}
  ~MpiPending() override {
    if (!done_ && request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);  // never leave MPI writing freed memory
  }
  MPI_Request* request() { return &request_; }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    MPI_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
    if (flag) {
      done_ = true;
      if (finish_) finish_();
    }
    return done_;
  }
  void wait(double timeoutS) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int polls = 0; !test(); ++polls) {
      if (polls > 64) std::this_thread::sleep_for(std::chrono::microseconds(polls > 4096 ? 500 : 20));
      if ((polls & 255) == 0) heartbeat::beat();
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (timeoutS > 0 && waited > timeoutS)
        throw errorInContext(
            fmt::format("timeout: {} of {} bytes on rank {} waited {:.1f} s for its peers", what_, bytes_, rank_, waited));
      if (const int sig = stopRequested())
        throw Error(
            fmt::format("stopped by signal {} while {} of {} bytes waited for its peers (the launcher is ending the run: did "
                        "another rank fail?)",
                        sig, what_, bytes_));
    }
  }

 private:
  std::string_view what_;  // a collective's name or "send"/"recv": static strings
  std::size_t bytes_;
  int rank_;
  std::function<void()> finish_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<PendingCollective> MpiCommunicator::start(int l, const CollectiveCall& c) {
  const bool inPlaceScatter =
      c.kind == CollectiveKind::kReduceScatter && c.recv == offsetBytes(const_cast<void*>(c.send), c.count * rank_, c.dtype);
  const bool nonblocking =
      c.op != RedOp::kAvg && !inPlaceScatter &&
      (c.kind == CollectiveKind::kAllReduce || c.kind == CollectiveKind::kReduceScatter || c.kind == CollectiveKind::kAllGather ||
       c.kind == CollectiveKind::kBroadcast || c.kind == CollectiveKind::kReduce);
  if (!nonblocking) return Communicator::start(l, c);
  const int n = mpiCount(c.count);
  const MPI_Datatype t = mpiType(c.dtype);
  std::function<void()> finish;
  if (c.kind == CollectiveKind::kBroadcast && rank_ == c.root && c.send != c.recv)
    finish = [s = c.send, r = c.recv, bytes = c.count * dtypeSize(c.dtype)] { std::memcpy(r, s, bytes); };
  auto p = std::make_unique<MpiPending>(collectiveOf(c.kind).name(), c.count * dtypeSize(c.dtype), rank_, std::move(finish));
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      MPI_CHECK(MPI_Iallreduce(inPlaceOr(c.send, c.recv), c.recv, n, t, mpiOp(c.op), comm_, p->request()));
      break;
    case CollectiveKind::kReduceScatter:
      MPI_CHECK(MPI_Ireduce_scatter_block(c.send, c.recv, n, t, mpiOp(c.op), comm_, p->request()));
      break;
    case CollectiveKind::kAllGather:
      MPI_CHECK(MPI_Iallgather(inPlaceOr(c.send, offsetBytes(c.recv, c.count * rank_, c.dtype)), n, t, c.recv, n, t, comm_,
                               p->request()));
      break;
    case CollectiveKind::kBroadcast:
      MPI_CHECK(MPI_Ibcast(rank_ == c.root ? const_cast<void*>(c.send) : c.recv, n, t, c.root, comm_, p->request()));
      break;
    case CollectiveKind::kReduce:
      MPI_CHECK(MPI_Ireduce(rank_ == c.root ? inPlaceOr(c.send, c.recv) : c.send, c.recv, n, t, mpiOp(c.op), c.root, comm_,
                            p->request()));
      break;
    default:
      break;
  }
  return p;
}

std::unique_ptr<PendingCollective> MpiCommunicator::startSend(int, const void* buf, std::size_t count, DType t, int peer,
                                                              int tag) {
  auto p = std::make_unique<MpiPending>("send", count * dtypeSize(t), rank_, nullptr);
  MPI_CHECK(MPI_Isend(buf, mpiCount(count), mpiType(t), peer, tag, comm_, p->request()));
  return p;
}

std::unique_ptr<PendingCollective> MpiCommunicator::startRecv(int, void* buf, std::size_t count, DType t, int peer, int tag) {
  auto p = std::make_unique<MpiPending>("recv", count * dtypeSize(t), rank_, nullptr);
  MPI_CHECK(MPI_Irecv(buf, mpiCount(count), mpiType(t), peer, tag, comm_, p->request()));
  return p;
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

bool MpiCommunicator::supports(CollectiveKind op, DType t, RedOp, std::string* why) const {
  if (collectiveOf(op).reduces() && (t == DType::kFloat16 || t == DType::kBFloat16)) {
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

void MpiCommunicator::allReduce(int, const void* send, void* recv, std::size_t count, DType t, RedOp op) {
  MPI_CHECK(MPI_Allreduce(inPlaceOr(send, recv), recv, mpiCount(count), mpiType(t), mpiOp(op), comm_));
  finishAverage(recv, count, t, op, size_);
}

void MpiCommunicator::allGather(int, const void* send, void* recv, std::size_t sendCount, DType t) {
  const void* s = inPlaceOr(send, offsetBytes(recv, sendCount * rank_, t));
  MPI_CHECK(MPI_Allgather(s, mpiCount(sendCount), mpiType(t), recv, mpiCount(sendCount), mpiType(t), comm_));
}

void MpiCommunicator::reduceScatter(int, const void* send, void* recv, std::size_t recvCount, DType t, RedOp op) {
  char* mine = offsetBytes(const_cast<void*>(send), recvCount * rank_, t);
  if (recv == mine) {
    // MPI's in-place result lands at the start of the buffer; NCCL's (our contract) at this rank's block.
    MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<void*>(send), mpiCount(recvCount), mpiType(t), mpiOp(op), comm_));
    if (rank_ != 0) std::memmove(mine, send, recvCount * dtypeSize(t));
  } else {
    MPI_CHECK(MPI_Reduce_scatter_block(send, recv, mpiCount(recvCount), mpiType(t), mpiOp(op), comm_));
  }
  finishAverage(recv, recvCount, t, op, size_);
}

void MpiCommunicator::broadcast(int, const void* send, void* recv, std::size_t count, DType t, int root) {
  // Out of place, the root sends from its send buffer and the others receive into their receive buffer.
  void* buf = rank_ == root ? const_cast<void*>(send) : recv;
  MPI_CHECK(MPI_Bcast(buf, mpiCount(count), mpiType(t), root, comm_));
  if (rank_ == root && send != recv) std::memcpy(recv, send, count * dtypeSize(t));
}

void MpiCommunicator::reduce(int, const void* send, void* recv, std::size_t count, DType t, RedOp op, int root) {
  const void* s = (rank_ == root) ? inPlaceOr(send, recv) : send;
  MPI_CHECK(MPI_Reduce(s, recv, mpiCount(count), mpiType(t), mpiOp(op), root, comm_));
  if (rank_ == root) finishAverage(recv, count, t, op, size_);
}

void MpiCommunicator::allToAll(int, const void* send, void* recv, std::size_t countPerPeer, DType t) {
  MPI_CHECK(
      MPI_Alltoall(inPlaceOr(send, recv), mpiCount(countPerPeer), mpiType(t), recv, mpiCount(countPerPeer), mpiType(t), comm_));
}

void MpiCommunicator::gather(int, const void* send, void* recv, std::size_t sendCount, DType t, int root) {
  const void* s = (rank_ == root) ? inPlaceOr(send, offsetBytes(recv, sendCount * rank_, t)) : send;
  MPI_CHECK(MPI_Gather(s, mpiCount(sendCount), mpiType(t), recv, mpiCount(sendCount), mpiType(t), root, comm_));
}

void MpiCommunicator::scatter(int, const void* send, void* recv, std::size_t recvCount, DType t, int root) {
  void* r = recv;
  if (rank_ == root && recv == offsetBytes(const_cast<void*>(send), recvCount * rank_, t)) r = MPI_IN_PLACE;
  MPI_CHECK(MPI_Scatter(send, mpiCount(recvCount), mpiType(t), r, mpiCount(recvCount), mpiType(t), root, comm_));
}

void MpiCommunicator::sendRecv(int, const void* send, void* recv, std::size_t count, DType t, int sendPeer, int recvPeer) {
  constexpr int kTag = 7;
  if (send == recv) {
    MPI_CHECK(MPI_Sendrecv_replace(recv, mpiCount(count), mpiType(t), sendPeer, kTag, recvPeer, kTag, comm_, MPI_STATUS_IGNORE));
  } else {
    MPI_CHECK(MPI_Sendrecv(send, mpiCount(count), mpiType(t), sendPeer, kTag, recv, mpiCount(count), mpiType(t), recvPeer, kTag,
                           comm_, MPI_STATUS_IGNORE));
  }
}

TimedBatch MpiCommunicator::timeBatch(int iters, int, const std::function<void()>& launch) {
  // Each iteration starts from a barrier (not timed), so every sample is one whole operation, as OSU does;
  // the slowest rank's time per iteration is taken by the caller.
  TimedBatch out;
  out.opUs.reserve(static_cast<std::size_t>(iters));
  double total = 0;
  for (int i = 0; i < iters; ++i) {
    MPI_CHECK(MPI_Barrier(comm_));
    const auto t0 = std::chrono::steady_clock::now();
    launch();
    const auto t1 = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
    out.opUs.push_back(us);
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

#pragma once
// The Communicator: one process's handle on a group of ranks, with the collectives trainscope measures.
// A process drives one rank (MPI, NCCL one-process-per-GPU) or several (NCCL --gpus-per-process), so
// every call names the local rank `l` it acts for; calls for several local ranks go between
// groupStart() and groupEnd(). Pointer semantics are NCCL's, including in-place:
//   all_gather in place:     send == recv + rank*sendCount      reduce_scatter in place: recv == send + rank*recvCount
//   gather in place:         send == recv + rank*sendCount      scatter in place:        recv == send + rank*recvCount
//   the others in place:     send == recv
// Calls may return before the data has moved (NCCL); synchronize() waits for everything issued.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/enum_names.h"
#include "comm/gpu_plan.h"

namespace ts {

class Bootstrap;
class Collective;      // comm/collectives/collective.h: one per file, each with its MPI and NCCL calls
class ExchangeMatrix;  // comm/collectives/exchange_matrix.h: alltoallv's per-pair counts

// The backend that moves the data: the command line's choice (auto: resolveBackend), and what a communicator
// is (Communicator::backend). Records and traces name the resolved one (the result schema's backend enum).
enum class BackendKind { kAuto, kMpi, kNccl };
template <>
struct EnumNames<BackendKind> {
  static constexpr std::pair<std::string_view, BackendKind> kNames[] = {
      {"auto", BackendKind::kAuto}, {"mpi", BackendKind::kMpi}, {"nccl", BackendKind::kNccl}};
};

// What a communicator's times come from (the collective record's timer).
enum class TimerKind { kSteadyClock, kCudaEvent };
template <>
struct EnumNames<TimerKind> {
  static constexpr std::pair<std::string_view, TimerKind> kNames[] = {{"steady_clock", TimerKind::kSteadyClock},
                                                                      {"cuda_event", TimerKind::kCudaEvent}};
};

// What timing one batch of iterations produced, for this process.
struct TimedBatch {
  std::vector<double> opUs;  // one duration per iteration (the slowest local rank's), microseconds
  double hostUsPerOp = 0;    // host wall-clock for the batch / iterations (includes launch cost)
};

// Which MPI call runs reduce_scatter (the MPI backend; NCCL has one call). Both give the same result, but
// Open MPI runs them with different algorithms: 4.1 runs MPI_Reduce_scatter_block at 2 ranks as a reduce and
// a scatter through a temporary of the whole buffer, allocated per call (issue #20).
enum class MpiReduceScatter {
  kBlock,   // MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block
  kCounts,  // MPI_Reduce_scatter, MPI_Ireduce_scatter, with a receive count per rank (all equal)
};
template <>
struct EnumNames<MpiReduceScatter> {
  static constexpr std::pair<std::string_view, MpiReduceScatter> kNames[] = {{"block", MpiReduceScatter::kBlock},
                                                                             {"counts", MpiReduceScatter::kCounts}};
};
// The call training and the sweep use unless told otherwise: the faster of the two as measured
// (comm/collectives/reduce_scatter.cpp has the numbers).
inline constexpr MpiReduceScatter kDefaultMpiReduceScatter = MpiReduceScatter::kCounts;

// One collective call, for Communicator::run and start. count is NCCL's count argument for that
// collective (all_gather: the send count, reduce_scatter: the receive count, alltoall: per peer).
struct CollectiveCall {
  const Collective* collective = nullptr;  // collectives::all_reduce(), ...
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DType dtype = DType::kFloat32;
  RedOp redop = RedOp::kSum;
  int root = 0;  // broadcast, reduce, gather, scatter; sendrecv: the peer sent to
  int peer = 0;  // sendrecv: the peer received from
  // reduce_scatter on the MPI backend: which MPI call it makes
  MpiReduceScatter mpiReduceScatter = kDefaultMpiReduceScatter;
  // alltoallv: the per-pair counts, count elements per unit (the caller keeps it while the call may run)
  const ExchangeMatrix* exchange = nullptr;
};

// How a collective is issued on the MPI backend: its blocking call (MPI_Allreduce), or its nonblocking form waited for
// at once (MPI_Iallreduce + MPI_Wait), which is how training issues its collectives (Communicator::start). Open MPI runs
// the two through different components (the blocking ones through its tuned collectives, the nonblocking ones through
// libnbc's schedules), so they cost differently at the same size, and a model of training is fitted from the form
// training uses (docs/prediction.md). NCCL has one form: every call is queued on its stream.
enum class IssueKind { kBlocking, kNonblocking };
template <>
struct EnumNames<IssueKind> {
  static constexpr std::pair<std::string_view, IssueKind> kNames[] = {{"blocking", IssueKind::kBlocking},
                                                                      {"nonblocking", IssueKind::kNonblocking}};
};

// What a timed batch runs each iteration (Communicator::timeBatch). The calls are built once, before the
// loop, so that the timed region holds the backend's call alone, as OSU's and nccl-tests' loops do.
struct TimedOp {
  std::vector<CollectiveCall> calls;       // one per local rank; none: the loop around no operation (the empty-op baseline)
  std::function<void()> beforeEach;        // untimed, before each iteration (planted faults); empty: nothing
  IssueKind issue = IssueKind::kBlocking;  // MPI: the call's form (a backend with one form takes kBlocking only)
};

// One send or receive of a batch posted together (Communicator::startTogether).
struct PointToPoint {
  enum class Kind { kSend, kRecv };
  Kind kind = Kind::kSend;
  void* buf = nullptr;  // a send's source (not written) or a receive's destination
  std::size_t count = 0;
  DType dtype = DType::kFloat32;
  int peer = 0;
  int tag = 0;
};

// A collective in flight (Communicator::start).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // True once complete; on MPI each call also lets the library progress the operation.
  virtual bool test() = 0;
  // Completes it, or throws an Error naming the op after timeoutS seconds (0: wait forever).
  virtual void wait(double timeoutS) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual BackendKind backend() const = 0;      // kMpi or kNccl, never kAuto
  virtual TimerKind timer() const = 0;          // what opUs comes from
  virtual int worldSize() const = 0;            // ranks in the group
  virtual int localCount() const = 0;           // ranks this process drives
  virtual int rank(int l) const = 0;            // global rank of local rank l
  virtual std::string device(int l) const = 0;  // "cpu", "cuda:0"

  // Whether the backend can run this op (its declaration names the backend) with this dtype/redop; when
  // not, *why says why.
  virtual bool supports(const Collective& op, DType t, RedOp r, std::string* why) const = 0;
  virtual bool supportsInPlace(const Collective& op) const = 0;

  // Memory in the space the backend works on (host for MPI, the local rank's GPU for NCCL).
  virtual void* allocate(int l, std::size_t bytes) = 0;
  virtual void release(int l, void* p) = 0;
  virtual void copyIn(int l, void* dst, const void* hostSrc, std::size_t bytes) = 0;
  virtual void copyOut(int l, void* hostDst, const void* src, std::size_t bytes) = 0;

  // The blocking call `c` describes, for local rank l: the collective's own MPI or NCCL call
  // (Collective::runMpi, runNccl), so a new collective needs nothing here.
  virtual void run(int l, const CollectiveCall& c) = 0;
  // Issues `c` and returns before it completes where the backend can (MPI nonblocking collectives for
  // sum all-reduce, reduce-scatter, all-gather, broadcast and reduce; NCCL: every op, on its stream);
  // otherwise runs it and returns it completed. The buffers must stay untouched until it completes.
  virtual std::unique_ptr<PendingCollective> start(int l, const CollectiveCall& c);
  // The communicator of the ranks that pass the same color, ordered by key then by rank here
  // (MPI_Comm_split, ncclCommSplit). Every rank of this communicator must call it; a process that drives
  // several local ranks cannot split (UsageError).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Point to point, for pipeline stages: a send of `count` elements to `peer`, or a receive from it.
  // Messages from one rank to another with one tag arrive in the order sent.
  virtual std::unique_ptr<PendingCollective> startSend(int l, const void* buf, std::size_t count, DType t, int peer, int tag) = 0;
  virtual std::unique_ptr<PendingCollective> startRecv(int l, void* buf, std::size_t count, DType t, int peer, int tag) = 0;
  // Posts sends and receives together, as one operation that completes once all of them have. NCCL runs a
  // stream's operations one after another and a large send blocks until its receiver runs: two neighbours
  // that each send to the other before receiving would wait on each other forever, unless each send is
  // posted in one group with the receive that must progress beside it (ncclGroupStart/End; NCCL's "calls
  // within a group ... should never block each other"). Within one batch at most one send to and one
  // receive from each peer: NCCL runs a group's calls to the same peer in order. The default posts each
  // through startSend/startRecv between groupStart() and groupEnd(); MPI's progress independently anyway.
  virtual std::unique_ptr<PendingCollective> startTogether(int l, const std::vector<PointToPoint>& ops);

  virtual void groupStart() {}
  virtual void groupEnd() {}
  // Waits until everything issued has completed, or throws after timeoutS seconds (0: wait forever).
  virtual void synchronize(double timeoutS) = 0;

  // Runs `op` (one collective on every local rank) `iters` times and times each iteration.
  // graphIters > 0 (NCCL): capture that many launches in a CUDA graph and time graph replays instead.
  // With no calls, the same loop times nothing: what the harness itself adds to each sample.
  virtual TimedBatch timeBatch(int iters, int graphIters, const TimedOp& op) = 0;

  // Ends the communicator without waiting for peers (used on timeouts).
  virtual void abort() = 0;
};

// RAII for one allocate()d buffer.
class CommBuffer {
 public:
  CommBuffer() = default;
  CommBuffer(Communicator& c, int l, std::size_t bytes) : comm_(&c), local_(l), bytes_(bytes), ptr_(c.allocate(l, bytes)) {}
  CommBuffer(CommBuffer&& o) noexcept { swap(o); }
  CommBuffer& operator=(CommBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  CommBuffer(const CommBuffer&) = delete;
  CommBuffer& operator=(const CommBuffer&) = delete;
  ~CommBuffer() {
    if (ptr_) comm_->release(local_, ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(CommBuffer& o) noexcept {
    std::swap(comm_, o.comm_);
    std::swap(local_, o.local_);
    std::swap(bytes_, o.bytes_);
    std::swap(ptr_, o.ptr_);
  }
  Communicator* comm_ = nullptr;
  int local_ = 0;
  std::size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

struct CommunicatorOptions {
  BackendKind backend = BackendKind::kAuto;
  GpuChoice gpus;  // NCCL: which GPUs each process drives (comm/gpu_plan.h)
};

// The backend `auto` resolves to on this machine: NCCL when built with it and a GPU is visible, else MPI.
BackendKind resolveBackend(BackendKind requested);
// Builds the communicator over the processes of `boot`; UsageError when the backend is not built in,
// when there is no GPU for NCCL, or when more GPUs are asked for than exist. Every check that one process
// can fail alone is agreed (comm/agreed_step.h) before the backend's exchanges: a failure on any process
// is the same error on every process, never a process left waiting for one that gave up.
std::unique_ptr<Communicator> makeCommunicator(const CommunicatorOptions& opts, Bootstrap& boot);

}  // namespace ts

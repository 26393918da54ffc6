#include "comm/nccl/nccl_communicator.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "base/units.h"
#include "comm/agreed_step.h"
#include "comm/bootstrap.h"
#include "comm/collectives/collective.h"
#include "comm/nccl/nccl_call.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_count.h"

namespace ts {

NcclCommunicator::NcclCommunicator(Bootstrap& boot, const GpuChoice& choice) : boot_(&boot) {
  // All that this process can fail alone comes first, and is agreed: which GPUs it drives and whether they
  // start (a stream on each makes its context), and on process 0 the id. Only then the exchange of the id,
  // which every process reaches or none.
  ncclUniqueId id{};
  agreedStep(boot, [&] {
    std::string whyNone;
    const int visible = cuda::usableDeviceCount(&whyNone);
    if (visible == 0)
      throw UsageError(fmt::format("--backend nccl needs a CUDA GPU, and none is usable on this host ({})", whyNone));
    const std::vector<int> gpus = planLocalGpus(choice, boot.localRank(), visible);
    locals_.reserve(gpus.size());
    for (int gpu : gpus) locals_.emplace_back(gpu);
    if (boot.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  });
  std::vector<ncclUniqueId> ids(static_cast<std::size_t>(boot.size()));
  boot.allGather(&id, ids.data(), sizeof(id));
  id = ids[0];
  // Every process computes the same verdict from the same counts, so a refusal here is agreed too.
  const long long perProcess = static_cast<long long>(locals_.size());
  if (boot.sum(perProcess) != perProcess * boot.size())
    throw UsageError(
        "--gpus-per-process 0 gives the processes different numbers of GPUs (their hosts show different counts): name a "
        "count every host has");
  worldSize_ = boot.size() * static_cast<int>(perProcess);
  for (std::size_t g = 0; g < locals_.size(); ++g)
    locals_[g].rank = boot.rank() * static_cast<int>(perProcess) + static_cast<int>(g);

  NCCL_CHECK(ncclGroupStart());
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    NCCL_CHECK(ncclCommInitRank(&L.comm, worldSize_, id, L.rank));
  }
  NCCL_CHECK(ncclGroupEnd());
}

NcclCommunicator::~NcclCommunicator() {
  for (auto& L : locals_) {  // the streams go after, with locals_
    cudaSetDevice(L.device);
    if (L.comm && !aborted_) ncclCommDestroy(L.comm);
    L.gate.reset();
  }
}

std::string NcclCommunicator::device(int l) const { return fmt::format("cuda:{}", locals_[l].device); }

bool NcclCommunicator::supports(const Collective& op, DType, RedOp, std::string* why) const {
  if (op.runsOn(BackendKind::kNccl)) return true;
  if (why) *why = op.whyNotOn(BackendKind::kNccl);
  return false;
}

bool NcclCommunicator::supportsInPlace(const Collective& op) const { return op.ncclInPlace(); }

void* NcclCommunicator::allocate(int l, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(locals_[l].device));
  cudaError_t rc = cudaSuccess;
  cuda::DeviceBuffer p = cuda::DeviceBuffer::tryAllocate(bytes, rc);
  if (rc != cudaSuccess) {
    std::size_t freeB = 0, totalB = 0;
    cudaMemGetInfo(&freeB, &totalB);
    throw errorInContext(fmt::format("cudaMalloc of {} on cuda:{} failed: {} ({} free of {})", formatBytes(bytes),
                                     locals_[l].device, cudaGetErrorString(rc), formatBytes(freeB), formatBytes(totalB)));
  }
  CUDA_CHECK(cudaMemsetAsync(p.get(), 0, bytes, locals_[l].stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(locals_[l].stream.get()));
  return p.release();  // the caller owns it, and gives it back through release()
}

void NcclCommunicator::release(int l, void* p) {
  cudaSetDevice(locals_[l].device);
  cuda::DeviceBuffer::adopt(p).reset();
}

// Copies go on the rank's own stream and are waited for: a plain cudaMemcpy from pageable memory may return
// before its DMA lands, and the non-blocking stream the collectives use would not wait for it.
void NcclCommunicator::copyIn(int l, void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(locals_[l].device));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, locals_[l].stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(locals_[l].stream.get()));
}

void NcclCommunicator::copyOut(int l, void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(locals_[l].device));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, locals_[l].stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(locals_[l].stream.get()));
}

void NcclCommunicator::run(int l, const CollectiveCall& c) {
  c.collective->runNccl({locals_[l].comm, locals_[l].stream.get()}, c);
}

// An op on the local rank's stream, and an event recorded after it.
class NcclPending final : public PendingCollective {
 public:
  NcclPending(NcclCommunicator& c, int l) : comm_(c), l_(l), select_(c.locals_[l].device), event_(cudaEventDisableTiming) {
    event_.record(c.locals_[l].stream.get());
  }
  bool test() override {
    CUDA_CHECK(cudaSetDevice(comm_.locals_[l_].device));
    const cudaError_t q = cudaEventQuery(event_.get());
    if (q == cudaSuccess) return true;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    return false;
  }
  void wait(double timeoutS) override { comm_.waitFor(l_, event_.get(), timeoutS); }

 private:
  NcclCommunicator& comm_;
  int l_;
  cuda::SelectDevice select_;  // before event_: the event is made on the rank's GPU
  cuda::Event event_;
};

std::unique_ptr<PendingCollective> NcclCommunicator::start(int l, const CollectiveCall& c) {
  run(l, c);
  return std::make_unique<NcclPending>(*this, l);
}

// NCCL matches sends and receives between two ranks in issue order; the tag is not needed.
std::unique_ptr<PendingCollective> NcclCommunicator::startSend(int l, const void* buf, std::size_t count, DType t, int peer,
                                                               int) {
  NCCL_CHECK(ncclSend(buf, count, ncclType(t), peer, locals_[l].comm, locals_[l].stream.get()));
  return std::make_unique<NcclPending>(*this, l);
}

std::unique_ptr<PendingCollective> NcclCommunicator::startRecv(int l, void* buf, std::size_t count, DType t, int peer, int) {
  NCCL_CHECK(ncclRecv(buf, count, ncclType(t), peer, locals_[l].comm, locals_[l].stream.get()));
  return std::make_unique<NcclPending>(*this, l);
}

// One group, and one event after it: inside a group ncclSend and ncclRecv only record what to do, and
// ncclGroupEnd launches it on the stream, so an event recorded per call would fire before the transfers ran.
std::unique_ptr<PendingCollective> NcclCommunicator::startTogether(int l, const std::vector<PointToPoint>& ops) {
  const Local& L = locals_[l];
  NCCL_CHECK(ncclGroupStart());
  for (const PointToPoint& op : ops) {
    const ncclResult_t ncclSendOrRecv = op.kind == PointToPoint::Kind::kSend
                                            ? ncclSend(op.buf, op.count, ncclType(op.dtype), op.peer, L.comm, L.stream.get())
                                            : ncclRecv(op.buf, op.count, ncclType(op.dtype), op.peer, L.comm, L.stream.get());
    if (ncclSendOrRecv != ncclSuccess && ncclSendOrRecv != ncclInProgress) {
      (void)ncclGroupEnd();  // closed before reporting, so later calls are not grouped; its error is this one's
      NCCL_CHECK(ncclSendOrRecv);
    }
  }
  NCCL_CHECK(ncclGroupEnd());
  return std::make_unique<NcclPending>(*this, l);
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  if (locals_.size() != 1)
    throw UsageError("sub-communicators (data/tensor/pipeline groups) need one GPU per process (--gpus-per-process 1)");
  const Local& from = locals_[0];
  std::unique_ptr<NcclCommunicator> sub(new NcclCommunicator());
  // The sub-communicator's stream can fail on one process alone: agreed before ncclCommSplit, which every
  // rank must reach. Only the world splits (the mesh's groups), so the world's processes are the ranks.
  const auto makeLocal = [&] { sub->locals_.emplace_back(from.device); };  // owned by sub: its comm too, once split
  if (boot_)
    agreedStep(*boot_, makeLocal);
  else
    makeLocal();
  Local& L = sub->locals_.back();
  NCCL_CHECK(ncclCommSplit(from.comm, color, key, &L.comm, nullptr));
  int rank = 0, size = 0;
  NCCL_CHECK(ncclCommUserRank(L.comm, &rank));
  NCCL_CHECK(ncclCommCount(L.comm, &size));
  L.rank = rank;
  sub->worldSize_ = size;
  return sub;
}

void NcclCommunicator::groupStart() { NCCL_CHECK(ncclGroupStart()); }
void NcclCommunicator::groupEnd() { NCCL_CHECK(ncclGroupEnd()); }

void NcclCommunicator::waitFor(int l, cudaEvent_t event, double timeoutS) {
  // Poll rather than block, so that a peer that never arrives turns into a timeout, and an asynchronous
  // NCCL error (a dead peer, a network failure) is reported instead of waited on forever.
  const heartbeat::WaitingForPeers waiting;
  const auto start = std::chrono::steady_clock::now();
  const Local& L = locals_[l];
  CUDA_CHECK(cudaSetDevice(L.device));
  for (;;) {
    const cudaError_t q = event ? cudaEventQuery(event) : cudaStreamQuery(L.stream.get());
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(L.comm, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      throw errorInContext(fmt::format("NCCL reported an asynchronous error on rank {}: {}", L.rank, ncclGetErrorString(async)));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeoutS > 0 && waited > timeoutS)
      throw errorInContext(fmt::format("did not complete within {:g} s on rank {} (cuda:{})", timeoutS, L.rank, L.device));
    if (const int sig = stopRequested())
      throw StoppedWhileWaiting(fmt::format(
          "stopped by signal {} while rank {} waited for its peers (the launcher is ending the run: did another rank fail?)", sig,
          L.rank));
    if (peerFailureNoted()) checkStopWhileWaiting("an NCCL operation", 0);  // a peer failed (bench/failures/run_ending.h)
    std::this_thread::yield();
  }
}

void NcclCommunicator::synchronize(double timeoutS) {
  for (int l = 0; l < localCount(); ++l) waitFor(l, nullptr, timeoutS);
  heartbeat::beat();
}

TimedBatch NcclCommunicator::timeWithEvents(int iters, int opsPerIter, const std::function<void()>& launchOne) {
  // Events between iterations on every local stream; the stream is gated first so that iterations run
  // back to back on the device however long the host takes to enqueue them. The host clock runs from the
  // first enqueue to the last completion: launch cost and device time together.
  std::vector<std::vector<cuda::Event>> events;
  events.reserve(locals_.size());
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    events.push_back(cuda::makeEvents(static_cast<std::size_t>(iters) + 1));
  }
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    L.gate->close(L.stream.get());
  }
  for (std::size_t g = 0; g < locals_.size(); ++g) events[g][0].record(locals_[g].stream.get());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    launchOne();
    for (std::size_t g = 0; g < locals_.size(); ++g) events[g][i + 1].record(locals_[g].stream.get());
  }
  for (auto& L : locals_) L.gate->open();
  for (int i = 1; i <= iters; ++i) {  // one heartbeat per completed iteration, for the watchdog
    for (std::size_t g = 0; g < locals_.size(); ++g) waitFor(static_cast<int>(g), events[g][i].get(), 0);
    heartbeat::beat();
  }
  for (auto& L : locals_) L.gate->checkOpenedInTime(fmt::format("timing {} iteration(s) on cuda:{}", iters, L.device));
  const auto t1 = std::chrono::steady_clock::now();
  TimedBatch out;
  out.hostUsPerOp = std::chrono::duration<double, std::micro>(t1 - t0).count() / std::max(iters * opsPerIter, 1);
  std::vector<double>& us = out.opUs;
  us.assign(static_cast<std::size_t>(iters), 0.0);
  for (std::size_t g = 0; g < locals_.size(); ++g) {
    for (int i = 0; i < iters; ++i)  // the slowest local GPU sets the time
      us[i] = std::max(us[i], 1000.0 * cuda::elapsedMs(events[g][i], events[g][i + 1]) / opsPerIter);
  }
  return out;
}

TimedBatch NcclCommunicator::timeBatch(int iters, int graphIters, const TimedOp& op) {
  // The host's enqueue is not timed (the gate holds the streams): the calls, built before the loop, are
  // enqueued as one group; no calls leave the events back to back, which times the events themselves.
  if (op.issue != IssueKind::kBlocking) throw Error("internal: NCCL has one form of each call (collectives refuses --issue)");
  const auto launch = [&] {
    if (op.beforeEach) op.beforeEach();
    if (op.calls.empty()) return;
    groupStart();
    for (std::size_t l = 0; l < op.calls.size(); ++l) run(static_cast<int>(l), op.calls[l]);
    groupEnd();
  };
  if (graphIters <= 0 || op.calls.empty()) return timeWithEvents(iters, 1, launch);
  // Capture graphIters launches on every local stream at once, then time replays of the graph.
  std::vector<cuda::StreamCapture> captures;
  captures.reserve(locals_.size());
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    captures.emplace_back(L.stream.get());
  }
  for (int k = 0; k < graphIters; ++k) launch();
  std::vector<cuda::Graph> graphs;
  graphs.reserve(locals_.size());
  for (std::size_t g = 0; g < locals_.size(); ++g) {
    CUDA_CHECK(cudaSetDevice(locals_[g].device));
    graphs.push_back(captures[g].end());
  }
  return timeWithEvents(iters, graphIters, [&] {
    for (std::size_t g = 0; g < locals_.size(); ++g) {
      CUDA_CHECK(cudaSetDevice(locals_[g].device));
      graphs[g].launch(locals_[g].stream.get());
    }
  });
}

void NcclCommunicator::abort() {
  if (aborted_) return;
  aborted_ = true;
  for (auto& L : locals_)
    if (L.comm) ncclCommAbort(L.comm);
}

}  // namespace ts

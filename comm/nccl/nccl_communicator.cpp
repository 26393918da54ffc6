#include "comm/nccl/nccl_communicator.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "base/units.h"
#include "comm/bootstrap.h"
#include "comm/collectives/collective.h"
#include "comm/nccl/nccl_call.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_count.h"

namespace ts {

NcclCommunicator::NcclCommunicator(Bootstrap& boot, int gpusPerProcess) {
  std::string whyNone;
  const int visible = cuda::usableDeviceCount(&whyNone);
  if (visible == 0)
    throw UsageError(fmt::format("--backend nccl needs a CUDA GPU, and none is usable on this host ({})", whyNone));
  const int perProcess = gpusPerProcess == 0 ? visible : gpusPerProcess;
  const int first = boot.localRank() * perProcess;
  if (perProcess < 1 || first + perProcess > visible)
    throw UsageError(fmt::format("asked for {} GPU(s) per process for local process {}, but this host has {} visible GPU(s)",
                                 perProcess, boot.localRank(), visible));
  worldSize_ = boot.size() * perProcess;

  ncclUniqueId id{};
  if (boot.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<ncclUniqueId> ids(static_cast<std::size_t>(boot.size()));
  boot.allGather(&id, ids.data(), sizeof(id));
  id = ids[0];

  locals_.reserve(static_cast<std::size_t>(perProcess));
  for (int g = 0; g < perProcess; ++g) locals_.emplace_back(first + g).rank = boot.rank() * perProcess + g;
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

bool NcclCommunicator::supports(const Collective&, DType, RedOp, std::string*) const { return true; }

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

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  if (locals_.size() != 1)
    throw UsageError("sub-communicators (data/tensor/pipeline groups) need one GPU per process (--gpus-per-process 1)");
  const Local& from = locals_[0];
  std::unique_ptr<NcclCommunicator> sub(new NcclCommunicator());
  Local& L = sub->locals_.emplace_back(from.device);  // owned by sub from here: its comm too, once split
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
    if (peerFailureNoted()) checkStopWhileWaiting("an NCCL operation", 0);  // a peer failed (bench/session/run_ending.h)
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

TimedBatch NcclCommunicator::timeBatch(int iters, int graphIters, const std::function<void()>& launch) {
  if (graphIters <= 0) return timeWithEvents(iters, 1, launch);
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

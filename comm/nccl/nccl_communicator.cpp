#include "comm/nccl/nccl_communicator.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "base/units.h"
#include "comm/bootstrap.h"
#include "comm/nccl/nccl_check.h"
#include "kernels/cuda/cuda_check.h"

namespace ts {
namespace {

ncclDataType_t ncclType(DType t) {
  switch (t) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt32: return ncclInt32;
    case DType::kInt8: return ncclInt8;
    case DType::kUInt8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(RedOp op) {
  switch (op) {
    case RedOp::kSum: return ncclSum;
    case RedOp::kProd: return ncclProd;
    case RedOp::kMin: return ncclMin;
    case RedOp::kMax: return ncclMax;
    case RedOp::kAvg: return ncclAvg;
  }
  return ncclSum;
}

// RAII for the events of one timed batch.
class EventSet {
 public:
  EventSet(int device, std::size_t n) : device_(device), events_(n, nullptr) {
    CUDA_CHECK(cudaSetDevice(device));
    for (auto& e : events_) CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventSet() {
    cudaSetDevice(device_);
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
  }
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  int device_;
  std::vector<cudaEvent_t> events_;
};

// RAII for one device's captured graph and its executable.
struct CapturedGraph {
  int device = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    cudaSetDevice(device);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

}  // namespace

NcclCommunicator::NcclCommunicator(Bootstrap& boot, int gpusPerProcess) {
  int visible = 0;
  const cudaError_t rc = cudaGetDeviceCount(&visible);
  if (rc != cudaSuccess || visible == 0)
    throw UsageError(fmt::format("--backend nccl needs a CUDA GPU, and none is usable on this host (cudaGetDeviceCount: {})",
                                 rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices"));
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

  locals_.resize(static_cast<std::size_t>(perProcess));
  for (int g = 0; g < perProcess; ++g) {
    auto& L = locals_[g];
    L.device = first + g;
    L.rank = boot.rank() * perProcess + g;
    CUDA_CHECK(cudaSetDevice(L.device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&L.stream, cudaStreamNonBlocking));
    L.gate = std::make_unique<cuda::StreamGate>();
  }
  NCCL_CHECK(ncclGroupStart());
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    NCCL_CHECK(ncclCommInitRank(&L.comm, worldSize_, id, L.rank));
  }
  NCCL_CHECK(ncclGroupEnd());
}

NcclCommunicator::~NcclCommunicator() {
  for (auto& L : locals_) {
    cudaSetDevice(L.device);
    if (L.comm && !aborted_) ncclCommDestroy(L.comm);
    L.gate.reset();
    if (L.stream) cudaStreamDestroy(L.stream);
  }
}

std::string NcclCommunicator::device(int l) const { return fmt::format("cuda:{}", locals_[l].device); }

bool NcclCommunicator::supports(CollectiveKind, DType, RedOp, std::string*) const { return true; }

bool NcclCommunicator::supportsInPlace(CollectiveKind op) const {
  // ncclAlltoAll defines no in-place form; send and receive of one buffer in a ring shift would race.
  return op != CollectiveKind::kAllToAll && op != CollectiveKind::kSendRecv;
}

void* NcclCommunicator::allocate(int l, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(locals_[l].device));
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, bytes);
  if (rc != cudaSuccess) {
    std::size_t freeB = 0, totalB = 0;
    cudaGetLastError();
    cudaMemGetInfo(&freeB, &totalB);
    throw errorInContext(fmt::format("cudaMalloc of {} on cuda:{} failed: {} ({} free of {})", formatBytes(bytes),
                                     locals_[l].device, cudaGetErrorString(rc), formatBytes(freeB), formatBytes(totalB)));
  }
  CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, locals_[l].stream));
  CUDA_CHECK(cudaStreamSynchronize(locals_[l].stream));
  return p;
}

void NcclCommunicator::release(int l, void* p) {
  cudaSetDevice(locals_[l].device);
  cudaFree(p);
}

// Copies go on the rank's own stream and are waited for: a plain cudaMemcpy from pageable memory may return
// before its DMA lands, and the non-blocking stream the collectives use would not wait for it.
void NcclCommunicator::copyIn(int l, void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(locals_[l].device));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, locals_[l].stream));
  CUDA_CHECK(cudaStreamSynchronize(locals_[l].stream));
}

void NcclCommunicator::copyOut(int l, void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(locals_[l].device));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, locals_[l].stream));
  CUDA_CHECK(cudaStreamSynchronize(locals_[l].stream));
}

void NcclCommunicator::allReduce(int l, const void* s, void* r, std::size_t n, DType t, RedOp op) {
  NCCL_CHECK(ncclAllReduce(s, r, n, ncclType(t), ncclOp(op), locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::allGather(int l, const void* s, void* r, std::size_t n, DType t) {
  NCCL_CHECK(ncclAllGather(s, r, n, ncclType(t), locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::reduceScatter(int l, const void* s, void* r, std::size_t n, DType t, RedOp op) {
  NCCL_CHECK(ncclReduceScatter(s, r, n, ncclType(t), ncclOp(op), locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::broadcast(int l, const void* s, void* r, std::size_t n, DType t, int root) {
  NCCL_CHECK(ncclBroadcast(s, r, n, ncclType(t), root, locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::reduce(int l, const void* s, void* r, std::size_t n, DType t, RedOp op, int root) {
  NCCL_CHECK(ncclReduce(s, r, n, ncclType(t), ncclOp(op), root, locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::allToAll(int l, const void* s, void* r, std::size_t n, DType t) {
  NCCL_CHECK(ncclAlltoAll(s, r, n, ncclType(t), locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::gather(int l, const void* s, void* r, std::size_t n, DType t, int root) {
  NCCL_CHECK(ncclGather(s, r, n, ncclType(t), root, locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::scatter(int l, const void* s, void* r, std::size_t n, DType t, int root) {
  NCCL_CHECK(ncclScatter(s, r, n, ncclType(t), root, locals_[l].comm, locals_[l].stream));
}
void NcclCommunicator::sendRecv(int l, const void* s, void* r, std::size_t n, DType t, int sendPeer, int recvPeer) {
  NCCL_CHECK(ncclGroupStart());
  NCCL_CHECK(ncclSend(s, n, ncclType(t), sendPeer, locals_[l].comm, locals_[l].stream));
  NCCL_CHECK(ncclRecv(r, n, ncclType(t), recvPeer, locals_[l].comm, locals_[l].stream));
  NCCL_CHECK(ncclGroupEnd());
}

// An op on the local rank's stream, and an event recorded after it.
class NcclPending final : public PendingCollective {
 public:
  NcclPending(NcclCommunicator& c, int l) : comm_(c), l_(l) {
    CUDA_CHECK(cudaSetDevice(c.locals_[l].device));
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(event_, c.locals_[l].stream));
  }
  ~NcclPending() override {
    cudaSetDevice(comm_.locals_[l_].device);
    if (event_) cudaEventDestroy(event_);
  }
  bool test() override {
    CUDA_CHECK(cudaSetDevice(comm_.locals_[l_].device));
    const cudaError_t q = cudaEventQuery(event_);
    if (q == cudaSuccess) return true;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    return false;
  }
  void wait(double timeoutS) override { comm_.waitFor(l_, event_, timeoutS); }

 private:
  NcclCommunicator& comm_;
  int l_;
  cudaEvent_t event_ = nullptr;
};

std::unique_ptr<PendingCollective> NcclCommunicator::start(int l, const CollectiveCall& c) {
  run(l, c);
  return std::make_unique<NcclPending>(*this, l);
}

// NCCL matches sends and receives between two ranks in issue order; the tag is not needed.
std::unique_ptr<PendingCollective> NcclCommunicator::startSend(int l, const void* buf, std::size_t count, DType t, int peer, int) {
  NCCL_CHECK(ncclSend(buf, count, ncclType(t), peer, locals_[l].comm, locals_[l].stream));
  return std::make_unique<NcclPending>(*this, l);
}

std::unique_ptr<PendingCollective> NcclCommunicator::startRecv(int l, void* buf, std::size_t count, DType t, int peer, int) {
  NCCL_CHECK(ncclRecv(buf, count, ncclType(t), peer, locals_[l].comm, locals_[l].stream));
  return std::make_unique<NcclPending>(*this, l);
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  if (locals_.size() != 1) throw UsageError("sub-communicators (data/tensor/pipeline groups) need one GPU per process (--gpus-per-process 1)");
  const Local& from = locals_[0];
  std::unique_ptr<NcclCommunicator> sub(new NcclCommunicator());
  Local L;
  L.device = from.device;
  CUDA_CHECK(cudaSetDevice(L.device));
  NCCL_CHECK(ncclCommSplit(from.comm, color, key, &L.comm, nullptr));
  int rank = 0, size = 0;
  NCCL_CHECK(ncclCommUserRank(L.comm, &rank));
  NCCL_CHECK(ncclCommCount(L.comm, &size));
  L.rank = rank;
  CUDA_CHECK(cudaStreamCreateWithFlags(&L.stream, cudaStreamNonBlocking));
  L.gate = std::make_unique<cuda::StreamGate>();
  sub->worldSize_ = size;
  sub->locals_.push_back(std::move(L));
  return sub;
}

void NcclCommunicator::groupStart() { NCCL_CHECK(ncclGroupStart()); }
void NcclCommunicator::groupEnd() { NCCL_CHECK(ncclGroupEnd()); }

void NcclCommunicator::waitFor(int l, cudaEvent_t event, double timeoutS) {
  // Poll rather than block, so that a peer that never arrives turns into a timeout, and an asynchronous
  // NCCL error (a dead peer, a network failure) is reported instead of waited on forever.
  const auto start = std::chrono::steady_clock::now();
  const Local& L = locals_[l];
  CUDA_CHECK(cudaSetDevice(L.device));
  for (;;) {
    const cudaError_t q = event ? cudaEventQuery(event) : cudaStreamQuery(L.stream);
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
      throw Error(fmt::format("stopped by signal {} while rank {} waited for its peers (the launcher is ending the run: did another rank fail?)", sig, L.rank));
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
  std::vector<EventSet> events;
  events.reserve(locals_.size());
  for (auto& L : locals_) events.emplace_back(L.device, static_cast<std::size_t>(iters) + 1);
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    L.gate->close(L.stream);
  }
  for (std::size_t g = 0; g < locals_.size(); ++g) CUDA_CHECK(cudaEventRecord(events[g][0], locals_[g].stream));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    launchOne();
    for (std::size_t g = 0; g < locals_.size(); ++g) CUDA_CHECK(cudaEventRecord(events[g][i + 1], locals_[g].stream));
  }
  for (auto& L : locals_) L.gate->open();
  for (int i = 1; i <= iters; ++i) {  // one heartbeat per completed iteration, for the watchdog
    for (std::size_t g = 0; g < locals_.size(); ++g) waitFor(static_cast<int>(g), events[g][i], 0);
    heartbeat::beat();
  }
  const auto t1 = std::chrono::steady_clock::now();
  TimedBatch out;
  out.hostUsPerOp = std::chrono::duration<double, std::micro>(t1 - t0).count() / std::max(iters * opsPerIter, 1);
  std::vector<double>& us = out.opUs;
  us.assign(static_cast<std::size_t>(iters), 0.0);
  for (std::size_t g = 0; g < locals_.size(); ++g) {
    for (int i = 0; i < iters; ++i) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events[g][i], events[g][i + 1]));
      us[i] = std::max(us[i], 1000.0 * ms / opsPerIter);  // the slowest local GPU sets the time
    }
  }
  return out;
}

TimedBatch NcclCommunicator::timeBatch(int iters, int graphIters, const std::function<void()>& launch) {
  if (graphIters <= 0) return timeWithEvents(iters, 1, launch);
  // Capture graphIters launches on every local stream at once, then time replays of the graph.
  std::vector<CapturedGraph> graphs(locals_.size());
  for (auto& L : locals_) {
    CUDA_CHECK(cudaSetDevice(L.device));
    CUDA_CHECK(cudaStreamBeginCapture(L.stream, cudaStreamCaptureModeThreadLocal));
  }
  for (int k = 0; k < graphIters; ++k) launch();
  for (std::size_t g = 0; g < locals_.size(); ++g) {
    graphs[g].device = locals_[g].device;
    CUDA_CHECK(cudaSetDevice(locals_[g].device));
    CUDA_CHECK(cudaStreamEndCapture(locals_[g].stream, &graphs[g].graph));
    CUDA_CHECK(cudaGraphInstantiate(&graphs[g].exec, graphs[g].graph, 0));
  }
  return timeWithEvents(iters, graphIters, [&] {
    for (std::size_t g = 0; g < locals_.size(); ++g) {
      CUDA_CHECK(cudaSetDevice(locals_[g].device));
      CUDA_CHECK(cudaGraphLaunch(graphs[g].exec, locals_[g].stream));
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

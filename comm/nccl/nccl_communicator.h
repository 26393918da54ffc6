#pragma once
// The NCCL backend: device buffers, NCCL collectives on one CUDA stream per local GPU, CUDA-event timing.
// One process drives the GPUs its GpuChoice gives it (comm/gpu_plan.h; one NCCL rank each, the same number
// on every process); the processes of the bootstrap exchange the ncclUniqueId. Global rank = process x GPUs
// per process + local index. What one process can fail alone is agreed before each collective step (the
// id's exchange, ncclCommSplit); a failure inside NCCL's own ncclCommInitRank is NCCL's to end.
#include <nccl.h>

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/gpu_plan.h"
#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/stream_gate.h"

namespace ts {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Bootstrap& boot, const GpuChoice& choice);
  ~NcclCommunicator() override;

  BackendKind backend() const override { return BackendKind::kNccl; }
  TimerKind timer() const override { return TimerKind::kCudaEvent; }
  int worldSize() const override { return worldSize_; }
  int localCount() const override { return static_cast<int>(locals_.size()); }
  int rank(int l) const override { return locals_[l].rank; }
  std::string device(int l) const override;
  bool supports(const Collective& op, DType t, RedOp r, std::string* why) const override;
  bool supportsInPlace(const Collective& op) const override;

  void* allocate(int l, std::size_t bytes) override;
  void release(int l, void* p) override;
  void copyIn(int l, void* dst, const void* hostSrc, std::size_t bytes) override;
  void copyOut(int l, void* hostDst, const void* src, std::size_t bytes) override;

  void run(int l, const CollectiveCall& c) override;
  std::unique_ptr<PendingCollective> start(int l, const CollectiveCall& c) override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  std::unique_ptr<PendingCollective> startSend(int l, const void* buf, std::size_t count, DType t, int peer, int tag) override;
  std::unique_ptr<PendingCollective> startRecv(int l, void* buf, std::size_t count, DType t, int peer, int tag) override;
  std::unique_ptr<PendingCollective> startTogether(int l, const std::vector<PointToPoint>& ops) override;

  void groupStart() override;
  void groupEnd() override;
  void synchronize(double timeoutS) override;
  TimedBatch timeBatch(int iters, int graphIters, const TimedOp& op) override;
  void abort() override;

 private:
  // One local GPU: its rank, communicator, stream and gate (the stream and gate made on that GPU).
  struct Local {
    explicit Local(int d) : select(d), device(d) {}
    cuda::SelectDevice select;  // first: what follows is made on `device`
    int device;
    int rank = 0;
    ncclComm_t comm = nullptr;  // destroyed (or aborted) by the communicator
    cuda::Stream stream;
    std::unique_ptr<cuda::StreamGate> gate = std::make_unique<cuda::StreamGate>();
  };
  NcclCommunicator() = default;  // split() fills it in
  friend class NcclPending;
  void waitFor(int l, cudaEvent_t event, double timeoutS);  // event null: the whole stream
  TimedBatch timeWithEvents(int iters, int opsPerIter, const std::function<void()>& launchOne);

  std::vector<Local> locals_;
  Bootstrap* boot_ = nullptr;  // the world's processes (null in a sub-communicator)
  int worldSize_ = 1;
  bool aborted_ = false;
};

}  // namespace ts

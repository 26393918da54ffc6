#pragma once
// The MPI backend: host buffers, MPI collectives on a duplicate of MPI_COMM_WORLD, wall-clock timing.
#include <mpi.h>

#include "comm/communicator.h"
#include "comm/mpi/mpi_call.h"

namespace ts {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();                         // a duplicate of MPI_COMM_WORLD
  explicit MpiCommunicator(MPI_Comm owned);  // takes ownership (split)
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  BackendKind backend() const override { return BackendKind::kMpi; }
  TimerKind timer() const override { return TimerKind::kSteadyClock; }
  int worldSize() const override { return size_; }
  int localCount() const override { return 1; }
  int rank(int) const override { return rank_; }
  std::string device(int) const override { return "cpu"; }
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

  void synchronize(double) override {}
  TimedBatch timeBatch(int iters, int graphIters, const TimedOp& op) override;
  void abort() override;

 private:
  MpiCall call() const { return {comm_, rank_, size_}; }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace ts

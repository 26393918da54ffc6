#pragma once
// MPI as the control plane; it also owns MPI's lifetime (MPI_Init_thread .. MPI_Finalize) for the process.
#include <mpi.h>

#include "comm/bootstrap.h"

namespace ts {

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap();
  ~MpiBootstrap() override;
  BootstrapKind kind() const override { return BootstrapKind::kMpi; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  void allGather(const void* in, void* out, std::size_t bytes) override;
  void barrier() override;
  void quietBarrier() override;
  [[noreturn]] void abortAll(int exitCode) override;
  void abandon() override { abandoned_ = true; }
  // The thread support MPI granted (MPI_THREAD_*).
  int threadLevel() const { return threadLevel_; }

 private:
  MPI_Comm control_ = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD, kept apart from measured traffic
  int rank_ = 0;
  int size_ = 1;
  int localRank_ = 0, localSize_ = 1;
  int threadLevel_ = MPI_THREAD_SINGLE;
  bool abandoned_ = false;
};

// True on the way out of a failed run: a peer failed, a stop was asked for, or an exception unwinds. Then no MPI
// call that could wait for the others or progress an abandoned request is made (MPI_Wait on a pending request,
// MPI_Comm_free, MPI_Finalize: a fence with every process): the others may be anywhere, or gone.
bool abandoningMpi();

// MPI_Abort on MPI_COMM_WORLD when MPI is initialised and not finalised (then it does not return); else nothing.
void abortMpiWorldIfInitialized(int exitCode);

// MPI's library version string ("Open MPI v4.1.4, ..."); callable before MPI_Init.
std::string mpiLibraryVersion();

}  // namespace ts

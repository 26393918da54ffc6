#include "comm/communicator.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "comm/bootstrap.h"
#ifdef TRAINSCOPE_HAVE_MPI
#include "comm/mpi/mpi_communicator.h"
#endif
#ifdef TRAINSCOPE_HAVE_NCCL
#include "comm/nccl/nccl_communicator.h"
#include "kernels/cuda/device_count.h"
#endif

namespace ts {

namespace {
class CompletedCollective final : public PendingCollective {
 public:
  bool test() override { return true; }
  void wait(double) override {}
};
// Operations that complete together: tested and waited for one after another.
class PendingTogether final : public PendingCollective {
 public:
  explicit PendingTogether(std::vector<std::unique_ptr<PendingCollective>> parts) : parts_(std::move(parts)) {}
  bool test() override {
    bool all = true;
    for (auto& p : parts_) all = p->test() && all;  // every part tested, so MPI progresses each
    return all;
  }
  void wait(double timeoutS) override {
    for (auto& p : parts_) p->wait(timeoutS);
  }

 private:
  std::vector<std::unique_ptr<PendingCollective>> parts_;
};
}  // namespace

std::unique_ptr<PendingCollective> Communicator::startTogether(int l, const std::vector<PointToPoint>& ops) {
  std::vector<std::unique_ptr<PendingCollective>> parts;
  groupStart();
  for (const PointToPoint& op : ops)
    parts.push_back(op.kind == PointToPoint::Kind::kSend ? startSend(l, op.buf, op.count, op.dtype, op.peer, op.tag)
                                                         : startRecv(l, op.buf, op.count, op.dtype, op.peer, op.tag));
  groupEnd();
  return std::make_unique<PendingTogether>(std::move(parts));
}

std::unique_ptr<PendingCollective> Communicator::start(int l, const CollectiveCall& c) {
  run(l, c);
  return std::make_unique<CompletedCollective>();
}

std::string backendName(BackendKind b) {
  switch (b) {
    case BackendKind::kAuto:
      return "auto";
    case BackendKind::kMpi:
      return "mpi";
    case BackendKind::kNccl:
      return "nccl";
  }
  return "?";
}

BackendKind resolveBackend(BackendKind requested) {
  if (requested != BackendKind::kAuto) return requested;
#ifdef TRAINSCOPE_HAVE_NCCL
  if (cuda::usableDeviceCount() > 0) return BackendKind::kNccl;
#endif
  return BackendKind::kMpi;
}

std::unique_ptr<Communicator> makeCommunicator(const CommunicatorOptions& opts, [[maybe_unused]] Bootstrap& boot) {
  const BackendKind b = resolveBackend(opts.backend);
  // Creating one is a collective (ncclCommInitRank, MPI_Comm_dup): a hang here is a peer's or the network's.
  const heartbeat::WaitingForPeers waiting;
  if (b == BackendKind::kNccl) {
#ifdef TRAINSCOPE_HAVE_NCCL
    return std::make_unique<NcclCommunicator>(boot, opts.gpusPerProcess);
#else
    throw UsageError("--backend nccl: this trainscope was built without CUDA/NCCL");
#endif
  }
  if (opts.gpusPerProcess != 1) throw UsageError("--gpus-per-process applies to --backend nccl only");
#ifdef TRAINSCOPE_HAVE_MPI
  if (boot.kind() != "mpi")
    throw UsageError(fmt::format(
        "the processes met through the {} bootstrap, but the MPI backend (the CPU's) needs them started by an MPI launcher: use "
        "mpirun or srun --mpi=pmix (RANK/WORLD_SIZE serve the NCCL backend on GPUs)",
        boot.kind()));
  return std::make_unique<MpiCommunicator>();
#else
  throw UsageError("--backend mpi: this trainscope was built without MPI");
#endif
}

}  // namespace ts

#include "comm/communicator.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/heartbeat.h"
#include "comm/agreed_step.h"
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

BackendKind resolveBackend(BackendKind requested) {
  if (requested != BackendKind::kAuto) return requested;
#ifdef TRAINSCOPE_HAVE_NCCL
  if (cuda::usableDeviceCount() > 0) return BackendKind::kNccl;
#endif
  return BackendKind::kMpi;
}

namespace {

// What the backend needs that this process may lack: the library built in, the options it takes.
void checkBackend(BackendKind b, const CommunicatorOptions& opts, [[maybe_unused]] const Bootstrap& boot) {
  if (b == BackendKind::kNccl) {
#ifndef TRAINSCOPE_HAVE_NCCL
    throw UsageError("--backend nccl: this trainscope was built without CUDA/NCCL");
#endif
    return;
  }
  if (opts.gpus.perProcess != 1) throw UsageError("--gpus-per-process applies to --backend nccl only");
  if (opts.gpus.first >= 0) throw UsageError("--device cuda:N applies to --backend nccl only");
#ifdef TRAINSCOPE_HAVE_MPI
  if (boot.kind() != BootstrapKind::kMpi)
    throw UsageError(fmt::format(
        "the processes met through the {} bootstrap, but the MPI backend (the CPU's) needs them started by an MPI launcher: use "
        "mpirun or srun --mpi=pmix (RANK/WORLD_SIZE serve the NCCL backend on GPUs)",
        nameOf(boot.kind())));
#else
  throw UsageError("--backend mpi: this trainscope was built without MPI");
#endif
}

// `auto` resolves on each process by the GPUs its host shows: processes on hosts with and without one would
// build different communicators, and wait in each other's exchanges.
void agreeOnBackend(Bootstrap& boot, BackendKind mine) {
  const std::vector<std::string> all = boot.allGatherStrings(std::string(nameOf(mine)));
  for (std::size_t p = 1; p < all.size(); ++p)
    if (all[p] != all[0])
      throw UsageError(
          fmt::format("--backend auto is {} on process 0 but {} on process {} (a host with a GPU and one without): "
                      "name the backend with --backend",
                      all[0], all[p], p));
}

}  // namespace

std::unique_ptr<Communicator> makeCommunicator(const CommunicatorOptions& opts, Bootstrap& boot) {
  // Creating one is a collective (ncclCommInitRank, MPI_Comm_dup): a hang here is a peer's or the network's.
  const heartbeat::WaitingForPeers waiting;
  BackendKind b = BackendKind::kAuto;
  agreedStep(boot, [&] {
    b = resolveBackend(opts.backend);
    checkBackend(b, opts, boot);
  });
  agreeOnBackend(boot, b);
#ifdef TRAINSCOPE_HAVE_NCCL
  if (b == BackendKind::kNccl) return std::make_unique<NcclCommunicator>(boot, opts.gpus);
#endif
#ifdef TRAINSCOPE_HAVE_MPI
  return std::make_unique<MpiCommunicator>();
#else
  throw Error("internal: no backend to build");  // checkBackend refused every other case
#endif
}

}  // namespace ts

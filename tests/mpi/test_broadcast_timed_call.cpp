// Out-of-place broadcast on MPI (issue #40): MPI_Bcast has one buffer, so the root's copy of its send buffer
// into its receive buffer is local work, not communication. The sweep's timed loop must time MPI_Bcast alone
// (as osu_bcast does) and still leave every rank, the root included, with the root's data; every path that
// completes the op (blocking, nonblocking, the timed loop) must give the checked result. Under mpirun at 2
// and 3 ranks (tests/integration/test_collectives_mpi.py).
#include <gtest/gtest.h>
#include <mpi.h>

#include <limits>
#include <vector>

#include "comm/collectives/check.h"
#include "comm/collectives/collective.h"
#include "comm/mpi/mpi_communicator.h"

namespace ts {
namespace {

constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();

struct OutOfPlace {
  const Collective& bcast = collectives::broadcast();
  CollectiveArgs args;
  CollectiveLayout lay;
  std::vector<float> send, recv;
  CollectiveCall call;
  OutOfPlace(const MpiCommunicator& comm, int root, std::size_t count)
      : args{DType::kFloat32, RedOp::kSum, root, comm.worldSize()},
        lay(bcast.layoutOfCount(count, sizeof(float), comm.worldSize())),
        send(lay.sendElems),
        recv(lay.recvElems, kPoison) {
    fillInput(bcast, args, comm.rank(0), lay, send.data());
    call = bcast.call(comm.rank(0), send.data(), recv.data(), lay, args);
  }
  CheckResult check(int rank) const { return checkOutput(bcast, args, rank, lay, recv.data()); }
};

// The call the timed loop encloses moves data between ranks only: on the root it leaves the receive buffer alone.
TEST(BroadcastTimedCall, TheRootsCopyIsNotPartOfTheMpiCall) {
  MpiCommunicator comm;
  const MpiCall world{MPI_COMM_WORLD, comm.rank(0), comm.worldSize()};
  for (const int root : {0, comm.worldSize() - 1}) {
    OutOfPlace op(comm, root, 1001);
    op.bcast.runMpi(world, op.call);
    if (comm.rank(0) == root) {
      EXPECT_EQ(op.check(root).wrong, op.lay.recvElems) << "root " << root << ": its receive buffer was written by the MPI call";
      op.bcast.finishMpi(world, op.call);
    }
    EXPECT_EQ(op.check(comm.rank(0)).wrong, 0u) << "root " << root << " rank " << comm.rank(0);
  }
}

// Every way the op completes leaves every rank's receive buffer right, the root's included.
TEST(BroadcastTimedCall, EveryPathGivesTheCheckedResultOnEveryRank) {
  MpiCommunicator comm;
  enum class Path { kBlocking, kNonblocking, kTimedLoop };
  for (const Path path : {Path::kBlocking, Path::kNonblocking, Path::kTimedLoop})
    for (const int root : {0, comm.worldSize() - 1}) {
      OutOfPlace op(comm, root, 300000);
      if (path == Path::kBlocking) comm.run(0, op.call);
      if (path == Path::kNonblocking) comm.start(0, op.call)->wait(60);
      if (path == Path::kTimedLoop) {
        EXPECT_EQ(comm.timeBatch(3, 0, TimedOp{{op.call}, {}}).opUs.size(), 3u);
      }
      const CheckResult r = op.check(comm.rank(0));
      EXPECT_EQ(r.checked, op.lay.recvElems);
      EXPECT_EQ(r.wrong, 0u) << "path " << static_cast<int>(path) << " root " << root << " rank " << comm.rank(0) << ": element "
                             << r.firstWrong << " is " << r.firstGot << ", expected " << r.firstExpected;
    }
}

}  // namespace
}  // namespace ts

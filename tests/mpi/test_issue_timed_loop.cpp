// The sweep's timed loop in both forms of an MPI call (`collectives --issue`, IssueKind): the blocking call, and the
// nonblocking form waited for at once (as training issues its collectives), must each leave the checked result, for
// every op that has a nonblocking form (alltoallv with skewed counts), every reduction (avg's division is local work the
// nonblocking request leaves for its finish), in place and out of place. Under mpirun at 2 and 3 ranks
// (tests/integration/test_collectives_mpi.py). Every rank runs every case in the same order, so the collectives meet; each rank
// checks its own output.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/collectives/check.h"
#include "comm/collectives/collective.h"
#include "comm/mpi/mpi_communicator.h"

namespace ts {
namespace {

// One op's buffers for one rank, in place or out of place as the sweep lays them out (collectives_runner.cpp's
// placement): one buffer, poisoned, with the input written where the call reads it.
struct Buffers {
  std::vector<float> a, b;
  const void* send = nullptr;
  void* recv = nullptr;
  Buffers(const Collective& c, const CollectiveArgs& args, int rank, const CollectiveLayout& lay, bool inPlace)
      : a(lay.sendElems + lay.recvElems, std::numeric_limits<float>::quiet_NaN()), b(a) {
    float* in = a.data();
    float* out = b.data();
    if (inPlace) {
      const InPlaceGeometry g = c.inPlace(rank, lay);
      in = g.outputInsideInput ? a.data() : a.data() + g.offsetElems;
      out = g.outputInsideInput ? a.data() + g.offsetElems : a.data();
    }
    fillInput(c, args, rank, lay, in);
    send = in;
    recv = out;
  }
};

TEST(IssueTimedLoop, BothFormsGiveTheCheckedResultForEveryOpReductionAndPlacement) {
  MpiCommunicator comm;
  const int n = comm.worldSize(), rank = comm.rank(0);
  int cases = 0;
  for (const Collective* c : allCollectives()) {
    if (!c->runsOn(BackendKind::kMpi) || !c->startsOnMpi()) continue;
    for (const RedOp redop : c->reduces() ? std::vector<RedOp>{RedOp::kSum, RedOp::kAvg} : std::vector<RedOp>{RedOp::kSum})
      for (const bool inPlace : {false, true})
        for (const IssueKind issue : {IssueKind::kBlocking, IssueKind::kNonblocking}) {
          if (inPlace && !comm.supportsInPlace(*c)) continue;  // alltoallv: measured out of place only
          CollectiveArgs args{DType::kFloat32, redop, n - 1, n};
          if (c->perPairCounts()) args.exchange = std::make_shared<const ExchangeMatrix>(ExchangeMatrix::skewed(n));
          const CollectiveLayout lay = c->layoutOfCount(1001, sizeof(float), n, args.exchange.get());
          Buffers buf(*c, args, rank, lay, inPlace);
          TimedOp op{{c->call(rank, buf.send, buf.recv, lay, args)}, {}, issue};
          EXPECT_EQ(comm.timeBatch(1, 0, op).opUs.size(), 1u);
          const CheckResult r = checkOutput(*c, args, rank, lay, buf.recv);
          EXPECT_EQ(r.wrong, 0u) << c->name() << " " << redOpName(redop) << (inPlace ? " in place " : " out of place ")
                                 << nameOf(issue) << " rank " << rank << ": element " << r.firstWrong << " is " << r.firstGot
                                 << ", expected " << r.firstExpected;
          ++cases;
        }
  }
  // all_reduce, reduce and reduce_scatter with two reductions, all_gather, broadcast and send with one; each 2 x 2;
  // alltoallv (skewed counts) out of place in both forms.
  EXPECT_EQ(cases, (3 * 2 + 3) * 4 + 2);
}

// An op without a nonblocking MPI call is never timed as if it had one (the sweep leaves it out before any work).
TEST(IssueTimedLoop, AnOpWithoutANonblockingCallIsRefused) {
  MpiCommunicator comm;
  const Collective& gather = collectives::gather();
  ASSERT_FALSE(gather.startsOnMpi());
  std::vector<float> send(8), recv(8 * static_cast<std::size_t>(comm.worldSize()));
  const CollectiveArgs args{DType::kFloat32, RedOp::kSum, 0, comm.worldSize()};
  const CollectiveLayout lay = gather.layoutOfCount(8, sizeof(float), comm.worldSize());
  const TimedOp op{{gather.call(comm.rank(0), send.data(), recv.data(), lay, args)}, {}, IssueKind::kNonblocking};
  EXPECT_THROW(comm.timeBatch(1, 0, op), Error);
}

}  // namespace
}  // namespace ts

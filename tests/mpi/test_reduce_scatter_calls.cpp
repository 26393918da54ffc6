// reduce_scatter's two MPI calls (MpiReduceScatter), under mpirun at 2 and 3 ranks
// (tests/integration/test_collectives_mpi.py): each gives the checked result blocking (Communicator::run, the
// sweep's) and nonblocking (Communicator::start, the ZeRO layouts'), in place and out of place. Every rank
// runs every test in the same order, so the collectives meet; each rank checks its own block.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "comm/collectives/check.h"
#include "comm/collectives/collective.h"
#include "comm/mpi/mpi_communicator.h"

namespace ts {
namespace {

using Case = std::tuple<MpiReduceScatter, bool /*inPlace*/, bool /*nonblocking*/>;

class ReduceScatterCalls : public ::testing::TestWithParam<Case> {};

TEST_P(ReduceScatterCalls, GiveTheCheckedResult) {
  const auto [call, inPlace, nonblocking] = GetParam();
  MpiCommunicator comm;
  const Collective& rs = collectives::reduce_scatter();
  const int n = comm.worldSize(), rank = comm.rank(0);
  // An odd count, and one past 1 MiB a block, where Open MPI picks other algorithms than for small messages.
  for (const std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{300000}})
    for (const RedOp redop : {RedOp::kSum, RedOp::kMax}) {
      const CollectiveArgs a{DType::kFloat32, redop, 0, n, call};
      const CollectiveLayout lay = rs.layoutOfCount(count, sizeof(float), n);
      std::vector<float> send(lay.sendElems), out(lay.recvElems, std::numeric_limits<float>::quiet_NaN());
      fillInput(rs, a, rank, lay, send.data());
      float* recv = inPlace ? send.data() + static_cast<std::size_t>(rank) * count : out.data();
      const CollectiveCall c = rs.call(rank, send.data(), recv, lay, a);
      EXPECT_EQ(c.mpiReduceScatter, call);
      if (nonblocking)
        comm.start(0, c)->wait(60);
      else
        comm.run(0, c);
      const CheckResult r = checkOutput(rs, a, rank, lay, recv);
      EXPECT_EQ(r.checked, count);
      EXPECT_EQ(r.wrong, 0u) << "rank " << rank << " count " << count << " " << redOpName(redop) << ": element " << r.firstWrong
                             << " is " << r.firstGot << ", expected " << r.firstExpected;
    }
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const auto [call, inPlace, nonblocking] = info.param;
  return std::string(nameOf(call)) + (inPlace ? "_in_place" : "_out_of_place") + (nonblocking ? "_nonblocking" : "_blocking");
}

INSTANTIATE_TEST_SUITE_P(EveryCallPlacementAndMode, ReduceScatterCalls,
                         ::testing::Combine(::testing::Values(MpiReduceScatter::kBlock, MpiReduceScatter::kCounts),
                                            ::testing::Bool(), ::testing::Bool()),
                         caseName);

}  // namespace
}  // namespace ts

// Every rank runs the tests; the exit code is 1 on every rank when any rank saw a failure.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int anyFailed = failed;
  if (MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) anyFailed = 1;
  MPI_Finalize();
  return anyFailed;
}

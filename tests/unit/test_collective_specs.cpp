// Each collective's byte count and bus factor against the formulas of docs/architecture.md ("Formulas").
#include <gtest/gtest.h>

#include "base/error.h"
#include "comm/collectives/collective.h"

namespace ts {

TEST(CollectiveSpecs, BusFactorsFollowTheDesignFormulas) {
  for (int n = 1; n <= 8; ++n) {
    const double ring = n > 1 ? double(n - 1) / n : 0.0;
    EXPECT_DOUBLE_EQ(findCollective("all_reduce").busFactor(n), 2 * ring) << n;
    EXPECT_DOUBLE_EQ(findCollective("all_gather").busFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(findCollective("reduce_scatter").busFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(findCollective("alltoall").busFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(findCollective("gather").busFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(findCollective("scatter").busFactor(n), ring) << n;
    EXPECT_DOUBLE_EQ(findCollective("broadcast").busFactor(n), 1.0) << n;
    EXPECT_DOUBLE_EQ(findCollective("reduce").busFactor(n), 1.0) << n;
    EXPECT_DOUBLE_EQ(findCollective("sendrecv").busFactor(n), 1.0) << n;
  }
}

TEST(CollectiveSpecs, GatheredOpsCountTheWholeBuffer) {
  // 1 MiB of float32 over 4 ranks: 65536 elements per rank, the record's bytes are the whole 1 MiB.
  for (const char* name : {"all_gather", "reduce_scatter", "alltoall", "gather", "scatter"}) {
    const auto lay = findCollective(name).layout(1 << 20, 4, 4);
    EXPECT_EQ(lay.count, 65536u) << name;
    EXPECT_EQ(lay.bytes, 1u << 20) << name;
    EXPECT_EQ(std::max(lay.sendElems, lay.recvElems), 262144u) << name;
  }
  // A size that does not divide among the ranks is rounded down to one that does.
  const auto odd = findCollective("all_gather").layout(100, 4, 3);
  EXPECT_EQ(odd.count, 8u);
  EXPECT_EQ(odd.bytes, 96u);
  EXPECT_EQ(findCollective("all_gather").layout(8, 4, 4).count, 0u);  // less than one element per rank
}

TEST(CollectiveSpecs, FlatOpsMoveTheBufferAsIs) {
  for (const char* name : {"all_reduce", "broadcast", "reduce", "sendrecv"}) {
    const auto lay = findCollective(name).layout(4096, 2, 8);
    EXPECT_EQ(lay.count, 2048u) << name;
    EXPECT_EQ(lay.sendElems, 2048u) << name;
    EXPECT_EQ(lay.recvElems, 2048u) << name;
    EXPECT_EQ(lay.bytes, 4096u) << name;
  }
}

TEST(CollectiveSpecs, RegistryKnowsAllNineAndRejectsOthers) {
  EXPECT_EQ(allCollectives().size(), 9u);
  for (const Collective* c : allCollectives()) EXPECT_EQ(&findCollective(c->name()), c);
  EXPECT_THROW(findCollective("allreduce"), UsageError);
}

}  // namespace ts

// Each collective's byte count and bus factor against the formulas of docs/architecture.md ("Formulas"), for
// the shape and bus factor each declares (the result schema, held to the registry by
// CollectiveRegistry.EachCollectiveIsItsDeclaration), and the tests' references against the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "base/error.h"
#include "collective_references.h"
#include "comm/collectives/collective.h"

namespace ts {

TEST(CollectiveReferences, CoverTheRegistry) {
  for (const Collective* c : allCollectives()) EXPECT_NE(test::findReference(c->name()), nullptr) << c->name();
  for (const auto& ref : test::collectiveReferences())
    EXPECT_NO_THROW(findCollective(ref.name)) << ref.name << " has a reference but is not in the registry";
}

TEST(CollectiveSpecs, BusFactorsFollowTheDesignFormulas) {
  for (int n = 1; n <= 8; ++n) {
    const double ring = n > 1 ? (n - 1.0) / n : 0.0;
    EXPECT_DOUBLE_EQ(busFactorOn(BusFactor::kTwiceRing, n), 2 * ring) << n;
    EXPECT_DOUBLE_EQ(busFactorOn(BusFactor::kRing, n), ring) << n;
    EXPECT_DOUBLE_EQ(busFactorOn(BusFactor::kOne, n), 1.0) << n;
  }
  EXPECT_DOUBLE_EQ(findCollective("all_reduce").busFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(findCollective("all_gather").busFactor(4), 0.75);
  EXPECT_DOUBLE_EQ(findCollective("broadcast").busFactor(4), 1.0);
}

TEST(CollectiveSpecs, GatheredOpsCountTheWholeBuffer) {
  // 1 MiB of float32 over 4 ranks: 65536 elements per rank, the record's bytes are the whole 1 MiB.
  for (const Collective* c : allCollectives()) {
    if (c->shape() == BufferShape::kFlat) continue;
    const auto lay = c->layout(1 << 20, 4, 4);
    EXPECT_EQ(lay.count, 65536u) << c->name();
    EXPECT_EQ(lay.bytes, 1u << 20) << c->name();
    EXPECT_EQ(std::max(lay.sendElems, lay.recvElems), 262144u) << c->name();
  }
  // A size that does not divide among the ranks is rounded down to one that does.
  const auto odd = findCollective("all_gather").layout(100, 4, 3);
  EXPECT_EQ(odd.count, 8u);
  EXPECT_EQ(odd.bytes, 96u);
  EXPECT_EQ(findCollective("all_gather").layout(8, 4, 4).count, 0u);  // less than one element per rank
}

TEST(CollectiveSpecs, FlatOpsMoveTheBufferAsIs) {
  for (const Collective* c : allCollectives()) {
    if (c->shape() != BufferShape::kFlat) continue;
    const auto lay = c->layout(4096, 2, 8);
    EXPECT_EQ(lay.count, 2048u) << c->name();
    EXPECT_EQ(lay.sendElems, 2048u) << c->name();
    EXPECT_EQ(lay.recvElems, 2048u) << c->name();
    EXPECT_EQ(lay.bytes, 4096u) << c->name();
  }
}

TEST(CollectiveSpecs, RegistryRejectsOtherNames) {
  for (const Collective* c : allCollectives()) EXPECT_EQ(&findCollective(c->name()), c);
  EXPECT_THROW(findCollective("allreduce"), UsageError);
}

}  // namespace ts

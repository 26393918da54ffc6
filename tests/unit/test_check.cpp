// The result check against an independent, naive statement of each collective's semantics: every op,
// dtype and reduction over several world sizes must check clean, and a planted wrong element must be
// counted exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collective_references.h"
#include "comm/collectives/check.h"

namespace ts {
namespace {

using test::Buffers;

// What each rank's output buffer holds after the op, from all ranks' inputs by the op's reference
// (collective_references.cpp), which states it apart from comm/collectives.
Buffers simulate(const Collective& c, const CollectiveArgs& a, const CollectiveLayout& lay) {
  const test::CollectiveReference* ref = test::findReference(c.name());
  if (!ref) throw std::runtime_error("no reference for " + std::string(c.name()));
  const int n = a.nranks;
  Buffers in(n), out(n, std::vector<double>(lay.recvElems, NAN));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < lay.sendElems; ++i) in[r].push_back(c.input(a, r, i));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < lay.recvElems; ++i) out[r][i] = ref->output(in, a, lay.count, r, i);
  return out;
}

std::vector<unsigned char> encode(const std::vector<double>& v, DType t) {
  std::vector<unsigned char> b(v.size() * dtypeSize(t));
  for (std::size_t i = 0; i < v.size(); ++i) storeElement(b.data(), t, i, std::isnan(v[i]) ? 0 : v[i]);
  return b;
}

}  // namespace

TEST(Check, EveryCollectiveChecksCleanAndCatchesOnePlantedError) {
  for (const Collective* c : allCollectives()) {
    for (int n : {1, 2, 3, 4, 8}) {
      for (DType t : allDTypes()) {
        const std::vector<RedOp> ops = c->reduces() ? allRedOps() : std::vector<RedOp>{RedOp::kSum};
        for (RedOp op : ops) {
          const CollectiveArgs a{t, op, n - 1, n};
          const CollectiveLayout lay = c->layout(96 * dtypeSize(t) * n, dtypeSize(t), n);
          const Buffers out = simulate(*c, a, lay);
          for (int r = 0; r < n; ++r) {
            auto bytes = encode(out[r], t);
            const CheckResult ok = checkOutput(*c, a, r, lay, bytes.data());
            ASSERT_EQ(ok.wrong, 0u) << c->name() << " n=" << n << " " << dtypeName(t) << " " << redOpName(op) << " rank " << r
                                    << " first wrong " << ok.firstWrong << " got " << ok.firstGot << " want " << ok.firstExpected;
            if (ok.checked == 0) continue;  // non-root ranks of rooted ops define no output
            std::size_t victim = lay.recvElems / 2;
            while (!c->expected(a, r, victim, lay)) victim = (victim + 1) % lay.recvElems;
            storeElement(bytes.data(), t, victim, loadElement(bytes.data(), t, victim) + 1);
            const CheckResult bad = checkOutput(*c, a, r, lay, bytes.data());
            ASSERT_EQ(bad.wrong, 1u) << c->name() << " " << dtypeName(t) << " " << redOpName(op);
            ASSERT_EQ(bad.firstWrong, victim);
          }
        }
      }
    }
  }
}

// alltoallv with uneven counts: zero blocks, a hot rank, a rank that receives nothing, blocks kept locally. Every
// dtype checks clean, a planted wrong element is counted once, and counts that differ from the matrix checked (one
// pair a unit off, as a sender with a wrong count would leave the receivers' buffers) are caught.
TEST(Check, AlltoallvUnevenCountsCheckCleanAndCatchWrongCounts) {
  const Collective& c = findCollective("alltoallv");
  std::vector<ExchangeMatrix> patterns;
  for (int n : {1, 2, 3, 4, 5}) patterns.push_back(ExchangeMatrix::skewed(n));
  patterns.push_back(ExchangeMatrix(3, {0, 4, 1, 0, 0, 3, 2, 0, 0}));  // rank 0 receives nothing; no block kept locally
  patterns.push_back(ExchangeMatrix(4, {5, 0, 0, 1, 0, 0, 0, 0, 2, 0, 7, 0, 0, 0, 0, 0}));  // ranks 1, 3 send nothing
  for (const ExchangeMatrix& m : patterns) {
    const int n = m.ranks();
    for (DType t : allDTypes()) {
      CollectiveArgs a{t, RedOp::kSum, 0, n};
      a.exchange = std::make_shared<const ExchangeMatrix>(m);
      const CollectiveLayout lay = c.layout(40 * dtypeSize(t) * m.busiest(), dtypeSize(t), n, a.exchange.get());
      ASSERT_EQ(lay.count, 40u);
      const Buffers out = simulate(c, a, lay);
      for (int r = 0; r < n; ++r) {
        auto bytes = encode(out[r], t);
        const CheckResult ok = checkOutput(c, a, r, lay, bytes.data());
        ASSERT_EQ(ok.wrong, 0u) << "n=" << n << " " << dtypeName(t) << " rank " << r << " first wrong " << ok.firstWrong;
        ASSERT_EQ(ok.checked, m.received(r) * lay.count) << "n=" << n << " rank " << r;  // its blocks, no more
        if (ok.checked == 0) continue;
        std::size_t victim = 0;
        while (!c.expected(a, r, victim, lay)) ++victim;
        storeElement(bytes.data(), t, victim, loadElement(bytes.data(), t, victim) + 1);
        const CheckResult bad = checkOutput(c, a, r, lay, bytes.data());
        ASSERT_EQ(bad.wrong, 1u) << "n=" << n << " " << dtypeName(t);
        ASSERT_EQ(bad.firstWrong, victim);
      }
    }
    // Each pair with a block, one unit short, as a sender with a wrong count would send it: the receivers' buffers no
    // longer check. (A unit more is the library's to refuse: the receive is shorter than the send, MPI_ERR_TRUNCATE.)
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        if (m.weight(s, d) == 0) continue;
        std::vector<std::uint64_t> w;
        for (const auto& row : m.rows()) w.insert(w.end(), row.begin(), row.end());
        --w[static_cast<std::size_t>(s * n + d)];
        if (std::all_of(w.begin(), w.end(), [](std::uint64_t x) { return x == 0; })) continue;
        CollectiveArgs sent{DType::kFloat32, RedOp::kSum, 0, n}, checked{DType::kFloat32, RedOp::kSum, 0, n};
        sent.exchange = std::make_shared<const ExchangeMatrix>(n, w);
        checked.exchange = std::make_shared<const ExchangeMatrix>(m);
        const CollectiveLayout lay = c.layoutOfCount(8, sizeof(float), n, checked.exchange.get());
        const Buffers arrived = simulate(c, sent, lay);
        std::size_t wrong = 0;
        for (int r = 0; r < n; ++r) {
          auto bytes = encode(arrived[r], DType::kFloat32);
          wrong += checkOutput(c, checked, r, lay, bytes.data()).wrong;
        }
        EXPECT_GT(wrong, 0u) << "n=" << n << " pair " << s << "->" << d << " a unit short";
      }
  }
}

TEST(Check, PoisonedOutputFails) {
  // 0xff bytes (what the runner writes before each checked call) are never an expected value.
  const Collective& c = findCollective("all_reduce");
  for (DType t : allDTypes()) {
    const CollectiveArgs a{t, RedOp::kSum, 0, 2};
    const CollectiveLayout lay = c.layout(64 * dtypeSize(t), dtypeSize(t), 2);
    std::vector<unsigned char> poison(lay.recvElems * dtypeSize(t), 0xff);
    EXPECT_EQ(checkOutput(c, a, 0, lay, poison.data()).wrong, lay.recvElems) << dtypeName(t);
  }
}

}  // namespace ts

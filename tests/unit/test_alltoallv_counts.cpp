// alltoallv's per-pair counts: the built-in patterns as documented (exchange_matrix.h), the sweep's layouts of them
// (uniform: alltoall's at every size), and --alltoallv-counts' file, each bad one refused with one line.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "bench/collectives/alltoallv_counts.h"
#include "bench/collectives/collectives_options.h"
#include "comm/collectives/collective.h"
#include "test_support.h"

namespace ts {
namespace {

using Rows = std::vector<std::vector<std::uint64_t>>;

std::string writeFile(const std::string& name, const std::string& text) {
  const auto path = test::scratchDir("alltoallv_counts", name) / "counts.json";
  std::ofstream(path) << text;
  return path.string();
}

TEST(AlltoallvCounts, SkewedIsAHotRankZeroAndZeroBlocks) {
  // Every rank sends rank 0 n units, nothing to rank s+1 (rank 0 excepted), one unit to the others.
  EXPECT_EQ(ExchangeMatrix::skewed(3).rows(), (Rows{{3, 0, 1}, {3, 1, 0}, {3, 1, 1}}));
  EXPECT_EQ(ExchangeMatrix::skewed(2).rows(), (Rows{{2, 0}, {2, 1}}));
  EXPECT_EQ(ExchangeMatrix::skewed(1).rows(), (Rows{{1}}));
  const ExchangeMatrix m = ExchangeMatrix::skewed(4);
  EXPECT_EQ(m.received(0), 16u);  // the hot rank: n x n units
  EXPECT_EQ(m.busiest(), 16u);
  EXPECT_EQ(m.sent(0), 4u + 0 + 1 + 1);
  // Packed offsets: rank 2's block to 3 follows its blocks to 0, 1 and 2; rank 3's block from 2 follows those from 0, 1.
  EXPECT_EQ(m.sendOffset(2, 3), 4u + 1 + 1);
  EXPECT_EQ(m.recvOffset(3, 2), 1u + 1);
}

TEST(AlltoallvCounts, UniformLaysOutAsAlltoallAtEverySize) {
  const Collective& v = findCollective("alltoallv");
  const Collective& a = findCollective("alltoall");
  for (int n : {1, 2, 3, 4, 7})
    for (std::size_t bytes : {1u, 8u, 100u, 4096u, 1000003u}) {
      const ExchangeMatrix u = ExchangeMatrix::uniform(n);
      const CollectiveLayout lv = v.layout(bytes, 4, n, &u), la = a.layout(bytes, 4, n);
      EXPECT_EQ(lv.count, la.count);
      EXPECT_EQ(lv.bytes, la.bytes);
      EXPECT_EQ(lv.sendElems, la.sendElems);
      EXPECT_EQ(lv.recvElems, la.recvElems);
      EXPECT_EQ(v.layout(bytes, 4, n).bytes, la.bytes);  // no matrix: uniform
    }
}

TEST(AlltoallvCounts, BytesAreTheBusiestRanksExchange) {
  const Collective& v = findCollective("alltoallv");
  const ExchangeMatrix m = ExchangeMatrix::skewed(3);  // rank 0 receives 9 units
  const CollectiveLayout lay = v.layout(1000, 4, 3, &m);
  EXPECT_EQ(lay.count, 1000u / (4 * 9));
  EXPECT_EQ(lay.bytes, lay.count * 9 * 4);
  EXPECT_EQ(lay.recvElems, lay.count * 9);
  EXPECT_EQ(v.layout(35, 4, 3, &m).count, 0u);  // less than one element per unit: the sweep skips it
  EXPECT_EQ(v.busFactor(3), findCollective("alltoall").busFactor(3));
  // A unit is 9 float32s (36 B) at the busiest rank: 8 B holds none, 64 B one, 128 B three, 1 KiB 28.
  std::vector<std::size_t> bytes;
  for (const CollectiveLayout& l : sweepLayouts(v, {8, 64, 128, 1024}, 4, 3, &m)) bytes.push_back(l.bytes);
  EXPECT_EQ(bytes, (std::vector<std::size_t>{36, 108, 1008}));
}

TEST(AlltoallvCounts, NamesAndFilesParse) {
  EXPECT_EQ(parseAlltoallvCounts("uniform").kind, AlltoallvCountsKind::kUniform);
  EXPECT_EQ(parseAlltoallvCounts("skewed").kind, AlltoallvCountsKind::kSkewed);
  const std::string path = writeFile("good", R"({"counts": [[3, 0, 1.0], [2, 2, 0], [5, 1, 1]], "source": "moe layer 3"})");
  const AlltoallvCounts c = parseAlltoallvCounts(path);
  EXPECT_EQ(c.kind, AlltoallvCountsKind::kFile);
  EXPECT_EQ(exchangeFor(c, 3).rows(), (Rows{{3, 0, 1}, {2, 2, 0}, {5, 1, 1}}));
  EXPECT_EQ(exchangeFor(parseAlltoallvCounts("skewed"), 3), ExchangeMatrix::skewed(3));
  const nlohmann::json j = toJson(c, exchangeFor(c, 3));
  EXPECT_EQ(j["pattern"], "file");
  EXPECT_EQ(j["file"], path);
  EXPECT_EQ(j["weights"][2][0], 5);
}

TEST(AlltoallvCounts, BadInputIsOneLine) {
  const auto bad = [](const std::string& name, const std::string& text) {
    const std::string path = writeFile(name, text);
    return test::usageError([&] { parseAlltoallvCounts(path); });
  };
  EXPECT_NE(bad("negative", R"({"counts": [[1, -1], [0, 1]]})").find("counts[0][1] is -1: negative"), std::string::npos);
  EXPECT_NE(bad("fraction", R"({"counts": [[1, 0.5], [0, 1]]})").find("counts[0][1] is 0.5: not a whole number"),
            std::string::npos);
  EXPECT_NE(bad("huge", R"({"counts": [[1, 1e300], [0, 1]]})").find("counts[0][1] is 1e+300: more than the"), std::string::npos);
  // JSON has no NaN or infinity; a number past a double's range is refused as the parser reads it.
  EXPECT_NE(bad("overflow", R"({"counts": [[1, 1e400], [0, 1]]})").find("not JSON"), std::string::npos);
  EXPECT_NE(bad("text", R"({"counts": [[1, "2"], [0, 1]]})").find("counts[0][1] is \"2\""), std::string::npos);
  EXPECT_NE(bad("zeros", R"({"counts": [[0, 0], [0, 0]]})").find("every entry is 0"), std::string::npos);
  EXPECT_NE(bad("ragged", R"({"counts": [[1, 1], [1]]})").find("counts[1] is not a row of 2 entries"), std::string::npos);
  EXPECT_NE(bad("nokey", R"({"count": [[1]]})").find("not an object whose \"counts\""), std::string::npos);
  EXPECT_NE(bad("notjson", "[[1, 2], [3, 4]").find("not JSON"), std::string::npos);
  EXPECT_NE(test::usageError([] { parseAlltoallvCounts("skewd"); }).find("neither uniform, skewed nor an existing file"),
            std::string::npos);
  const auto dir = test::scratchDir("alltoallv_counts", "dir");
  EXPECT_NE(test::usageError([&] { parseAlltoallvCounts(dir.string()); }).find("--alltoallv-counts"), std::string::npos);
  const AlltoallvCounts two = parseAlltoallvCounts(writeFile("two", R"({"counts": [[1, 2], [3, 4]]})"));
  EXPECT_NE(test::usageError([&] { exchangeFor(two, 3); }).find("a 2 x 2 matrix, but the run has 3 rank(s)"), std::string::npos);
}

}  // namespace
}  // namespace ts

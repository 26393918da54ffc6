// The link and link_outliers records as the schema reads them, which pairs count as outliers, and the
// console rows of `links` rendered from the records.
#include <gtest/gtest.h>

#include "bench/links/link_outliers.h"
#include "bench/links/link_record.h"
#include "bench/links/links_table.h"

namespace ts {
namespace {

LinkMeasurement mpiTest(const char* test, bool latency, std::vector<double> us, long long wrong) {
  LinkMeasurement m;
  m.test = test;
  m.src = "rank 0";
  m.dst = "rank 3";
  m.engine = "mpi";
  m.direction = "uni";
  m.latency = latency;
  m.bytes = latency ? 8 : 1000000;
  m.samplesUs = std::move(us);
  m.link = {"network", "InfiniBand", 50};
  m.wrong = wrong;
  m.fields = MpiPairFields{"node-a", "node-b", m.bytes, latency ? 1 : 64};
  return m;
}

}  // namespace

TEST(LinkRecord, EachTestFamilyWritesItsOwnFields) {
  LinkMeasurement memory;
  memory.test = "host_memory_copy";
  memory.bytes = 1000;
  memory.samplesUs = {1};
  memory.fields = HostMemoryFields{"node-a", 2, 8, 1 << 20};
  memory.label = "l";
  nlohmann::json j = toJson(memory);
  EXPECT_EQ(j["host"], "node-a");
  EXPECT_EQ(j["processes"].dump(), "2");
  EXPECT_EQ(j["threads_per_process"].dump(), "8");
  EXPECT_EQ(j["array_bytes"].dump(), "1048576");
  EXPECT_EQ(j["bandwidth_gbps"].dump(), "1.0");
  EXPECT_TRUE(j["latency_us"].is_null());
  EXPECT_EQ(j["label"], "l");
  EXPECT_FALSE(j.contains("step") || j.contains("src_host"));

  j = toJson(mpiTest("mpi_latency", true, {2, 3, 4}, 0));
  EXPECT_EQ(j["src_host"], "node-a");
  EXPECT_EQ(j["dst_host"], "node-b");
  EXPECT_EQ(j["message_bytes"].dump(), "8");
  EXPECT_EQ(j["window"].dump(), "1");
  EXPECT_TRUE(j["bandwidth_gbps"].is_null());
  EXPECT_EQ(j["latency_us"]["median"].dump(), "3.0");
  EXPECT_FALSE(j.contains("host"));

  LinkMeasurement gpu;  // the GPU tests' fields come as they were given
  gpu.extra = {{"host", "node-c"}, {"p2p", nullptr}};
  gpu.step = "links";
  j = toJson(gpu);
  EXPECT_EQ(j["host"], "node-c");
  EXPECT_TRUE(j.contains("p2p") && j["p2p"].is_null());
  EXPECT_EQ(j["step"], "links");
}

TEST(LinkOutliers, APairWorseThanTheFractionOfTheMedianIsOne) {
  const std::vector<PairFigure> bw = {{"rank 0", "rank 1", "a", "b", 10},
                                      {"rank 1", "rank 2", "b", "c", 7.9},
                                      {"rank 2", "rank 3", "c", "d", 8.5},
                                      {"rank 3", "rank 0", "d", "a", 12}};
  const LinkOutliersRecord r = findOutliers("mpi_bandwidth", "network", bw, 0.2, false);
  EXPECT_DOUBLE_EQ(r.median, 9.25);
  ASSERT_EQ(r.outliers.size(), 0u);  // 7.9 is within 20% below 9.25
  const LinkOutliersRecord tight = findOutliers("mpi_bandwidth", "network", bw, 0.1, false);
  ASSERT_EQ(tight.outliers.size(), 1u);
  EXPECT_EQ(tight.outliers[0].src, "rank 1");

  const std::vector<PairFigure> lat = {
      {"rank 0", "rank 1", "a", "b", 2}, {"rank 1", "rank 2", "b", "c", 2.1}, {"rank 2", "rank 0", "c", "a", 3}};
  const LinkOutliersRecord slow = findOutliers("mpi_latency", "shm", lat, 0.2, true);  // higher is worse
  ASSERT_EQ(slow.outliers.size(), 1u);
  EXPECT_EQ(slow.outliers[0].dstHost, "a");
  EXPECT_EQ(
      toJson(slow).dump(),
      R"({"fraction":0.2,"kind":"link_outliers","link_type":"shm","median":2.1,)"
      R"("outliers":[{"dst":"rank 0","dst_host":"a","src":"rank 2","src_host":"c","value":3.0}],"pairs":3,"test":"mpi_latency","unit":"us"})");
  EXPECT_EQ(outlierLines(slow),
            "# outlier: mpi_latency rank 2 -> rank 0 (c -> a): 3 us against a median of 2.1 over 3 shm pairs\n");
  EXPECT_EQ(outlierLines(tight),
            "# outlier: mpi_bandwidth rank 1 -> rank 2 (b -> c): 7.9 GB/s against a median of 9.25 over 4 network pairs\n");
  EXPECT_EQ(outlierLines(r), "");
}

TEST(LinksTable, RowsComeFromTheRecords) {
  LinkMeasurement copy;
  copy.test = "host_memory_triad";
  copy.bytes = 3000;
  copy.samplesUs = {1};
  copy.wrong = 2;
  copy.fields = HostMemoryFields{"node-a", 2, 8, 1 << 20};
  EXPECT_EQ(hostMemoryTableRow(copy), "  node-a                           2         3000        triad         3.00       2\n");
  const std::array<LinkMeasurement, 3> pair = {mpiTest("mpi_latency", true, {2.5}, 0), mpiTest("mpi_bandwidth", false, {100}, 1),
                                               mpiTest("mpi_bibandwidth", false, {200}, 0)};
  EXPECT_EQ(mpiPairsTableRow(0, 3, pair),
            "  0 (node-a)             3 (node-b)             network          2.50      10.00        5.00       1\n");
}

}  // namespace ts

// The link and link_outliers records as the schema reads them, which pairs count as outliers, the
// console rows of `links` rendered from the records, and the figures flagged above their link's peak.
#include <gtest/gtest.h>

#include <fstream>

#include "bench/links/link_outliers.h"
#include "bench/links/link_peaks.h"
#include "bench/links/link_record.h"
#include "bench/links/link_suspects.h"
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
  m.fields = MpiPairFields{"node-a", "node-b", m.bytes, latency ? 1 : 64, 5, static_cast<int>(m.samplesUs.size()), std::nullopt};
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

// osu_bw's figure: the bytes of every timed window over the timed loop's wall time, whatever the spread of the
// windows (a median of them flips between a cache-fast and a slow mode from run to run); the record carries the
// method (window, warm-up, timed windows, the loop's time) and what the receiver got.
TEST(LinkRecord, MpiBandwidthIsTheBytesOfAllWindowsOverTheTimedLoop) {
  LinkMeasurement m = mpiTest("mpi_bandwidth", false, {100, 100, 400, 1000, 1000}, 0);
  m.totalUs = 2700;
  auto& f = std::get<MpiPairFields>(m.fields);
  f.deliveredBytes = 5 * m.bytes;
  EXPECT_DOUBLE_EQ(*bandwidthOf(m), 5e6 / 2700e-6 / 1e9);  // the median (400 us) would say 2.5 GB/s
  const nlohmann::json j = toJson(m);
  EXPECT_EQ(j["window"].dump(), "64");
  EXPECT_EQ(j["warmup"].dump(), "5");
  EXPECT_EQ(j["iterations"].dump(), "5");
  EXPECT_EQ(j["total_us"].dump(), "2700.0");
  EXPECT_EQ(j["delivered_bytes"].dump(), "5000000");
  EXPECT_EQ(j["bandwidth_gbps"], *bandwidthOf(m));
  EXPECT_EQ(j["ceiling_suspect"], false);
  EXPECT_FALSE(j.contains("ceiling_suspect_cause"));
  m.totalUs.reset();  // the other tests' figure: bytes over the median sample
  EXPECT_DOUBLE_EQ(*bandwidthOf(m), 1e6 / 400e-6 / 1e9);
  EXPECT_FALSE(toJson(m).contains("total_us"));
}

namespace {
// A bandwidth record of `gbps` over a link of type `type` and peak `peak` (GB/s per direction).
LinkMeasurement overLink(const char* type, std::optional<double> peak, double gbps, bool bi,
                         std::uint64_t messageBytes = 1000000) {
  LinkMeasurement m = mpiTest(bi ? "mpi_bibandwidth" : "mpi_bandwidth", false, {1e6 / (gbps * 1e3)}, 0);
  m.direction = bi ? "bi" : "uni";
  m.link = {type, "", peak};
  std::get<MpiPairFields>(m.fields).messageBytes = messageBytes;
  return m;
}
std::optional<SuspectCause> judged(LinkMeasurement m, const PeakJudge& j = {1, 32u << 20}) {
  judgePeak(m, j);
  return m.suspect;
}
}  // namespace

TEST(LinkSuspects, AFigureAboveThePeakOfItsDirectionsIsSuspectWithItsCause) {
  EXPECT_FALSE(judged(overLink("network", 50, 49, false)));
  EXPECT_EQ(judged(overLink("network", 50, 51, false)), SuspectCause::kUnexplained);
  // A duplex link carries its peak each way at once: both directions are held to twice it; memory is shared.
  EXPECT_FALSE(judged(overLink("network", 50, 99, true)));
  EXPECT_EQ(judged(overLink("network", 50, 101, true)), SuspectCause::kUnexplained);
  EXPECT_EQ(judged(overLink("shm", 10, 11, true)), SuspectCause::kCacheResidency);           // 4 x 1 MB of buffers fit 32 MiB
  EXPECT_EQ(judged(overLink("shm", 10, 11, false, 17u << 20)), SuspectCause::kUnexplained);  // 2 x 17 MiB fit no longer
  EXPECT_EQ(judged(overLink("shm", 10, 11, false, 8u << 20)), SuspectCause::kCacheResidency);
  EXPECT_FALSE(judged(overLink("shm", std::nullopt, 1e6, false)));  // no peak known: nothing to be above
  EXPECT_FALSE(judged(mpiTest("mpi_latency", true, {0.001}, 0)));   // a latency has no bandwidth

  // A planted peak (TRAINSCOPE_FAULT=ceiling:scale=X) scales the peak the record shows, and names itself as the cause.
  LinkMeasurement m = overLink("network", 50, 10, false);
  judgePeak(m, {0.1, 32u << 20});
  EXPECT_EQ(m.suspect, SuspectCause::kPlantedFault);
  EXPECT_DOUBLE_EQ(*m.link.peakGbps, 5);
  const nlohmann::json j = toJson(m);
  EXPECT_EQ(j["ceiling_suspect"], true);
  EXPECT_EQ(j["ceiling_suspect_cause"], "planted_fault");
  EXPECT_DOUBLE_EQ(j["link"]["fraction_of_peak"].get<double>(), 2);

  // The console marks it ! in its cell and names it in one warning line.
  const std::array<LinkMeasurement, 3> pair = {mpiTest("mpi_latency", true, {2.5}, 0), m,
                                               mpiTest("mpi_bibandwidth", false, {200}, 0)};
  EXPECT_EQ(mpiPairsTableRow(0, 3, pair),
            "  0 (node-a)             3 (node-b)             network          2.50     10.00!        5.00       0\n");
  EXPECT_EQ(
      linkSuspectWarning({linkSuspectFigure(m)}),
      "# warning: 1 figure(s) above 100% of their link's peak (marked ! and ceiling_suspect); mpi_bandwidth rank 0 -> rank 3 "
      "(200%): likely cause: a planted fault (TRAINSCOPE_FAULT=ceiling) scaled the link peaks down");
  EXPECT_EQ(linkSuspectWarning({}), "");
}

// The causes a link record can carry are the schema's enum for it.
TEST(LinkSuspects, TheCausesAreTheSchemas) {
  std::ifstream in(TRAINSCOPE_SOURCE_DIR "/reports/schema/result-v1.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  const auto names = schema.at(nlohmann::json::json_pointer("/$defs/link/properties/ceiling_suspect_cause/enum"));
  std::vector<std::string> written;
  for (const auto& m : {overLink("shm", 1, 10, false), overLink("network", 1, 10, false)}) {
    for (const double scale : {1.0, 0.5}) {
      LinkMeasurement x = m;
      judgePeak(x, {scale, 32u << 20});
      ASSERT_TRUE(x.suspect);
      written.emplace_back(suspectCauseName(*x.suspect));
    }
  }
  for (const auto& w : written) EXPECT_NE(std::find(names.begin(), names.end(), w), names.end()) << w;
  for (const auto& n : names) EXPECT_NE(std::find(written.begin(), written.end(), n), written.end()) << n;
}

// The peaks come from the datasheet declared once (reports/schema/link-datasheet.json, generated into the build): the
// figures the datasheets give, and the first matching memory row for a GPU's name (tests/reports/test_link_datasheet.py
// checks the reports' reading of the same rows).
TEST(LinkPeaks, TheDatasheetsFigures) {
  std::string gen;
  EXPECT_EQ(nvlinkPerLinkGbps(9, 0, &gen), 25.0);
  EXPECT_EQ(gen, "NVLink4");
  EXPECT_EQ(nvlinkPerLinkGbps(10, 0, nullptr), 50.0);
  EXPECT_FALSE(nvlinkPerLinkGbps(6, 1, nullptr));
  EXPECT_DOUBLE_EQ(*pcieGbps(5, 16), 32.0 * 128 / 130 / 8 * 16);
  EXPECT_DOUBLE_EQ(*pcieGbps(2, 8), 5.0 * 8 / 10 / 8 * 8);
  EXPECT_FALSE(pcieGbps(7, 16));
  EXPECT_FALSE(pcieGbps(4, 0));
  EXPECT_EQ(deviceMemoryGbps("NVIDIA H200"), 4800);
  EXPECT_EQ(deviceMemoryGbps("NVIDIA H100 PCIe"), 2000);  // before the plain H100's row
  EXPECT_EQ(deviceMemoryGbps("NVIDIA H100 80GB HBM3"), 3350);
  EXPECT_FALSE(deviceMemoryGbps("NVIDIA T4"));
}

}  // namespace ts

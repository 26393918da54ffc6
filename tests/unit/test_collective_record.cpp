// The collective record as the schema and the reports read it (names, nulls, integer or number), and the
// console row rendered from it.
#include <gtest/gtest.h>

#include "bench/collectives/collective_record.h"
#include "bench/collectives/collectives_table.h"

namespace ts {
namespace {

// A broadcast: rooted, no reduction; 2 of 4 ranks' processes, checked with 3 wrong elements.
CollectiveRecord broadcast() {
  CollectiveRecord r;
  r.op = "broadcast";
  r.backend = BackendKind::kMpi;
  r.timer = TimerKind::kSteadyClock;
  r.dtype = DType::kInt32;
  r.root = 2;
  r.ranks = 4;
  r.processes = 2;
  r.bytes = 4096;
  r.count = 1024;
  r.iters = 20;
  r.trials = 1;
  r.time.median = 12.5;
  r.samplesUs = {12.5, 13};
  r.emptyOpTime.median = 0.03;
  r.algbwGbps = 0.25;
  r.busFactor = 1;
  r.busbwGbps = 0.25;
  r.spread = {1, 0, 12, 12.5, 12.2};
  r.checked = true;
  r.wrong = 3;
  return r;
}

}  // namespace

TEST(CollectiveRecord, JsonStatesWhatTheOpLacksAsNull) {
  CollectiveRecord r = broadcast();
  const nlohmann::json j = toJson(r);
  EXPECT_TRUE(j["redop"].is_null());
  EXPECT_EQ(j["root"].dump(), "2");
  EXPECT_EQ(j["check"].dump(), R"({"passed":false,"performed":true,"wrong":3})");
  EXPECT_EQ(
      j["rank_spread"].dump(),
      R"({"fastest":1,"fastest_median_us":12.0,"mean_of_process_means_us":12.2,"slowest":0,"slowest_median_us":12.5,"unit":"process"})");
  EXPECT_FALSE(j.contains("label") || j.contains("step"));

  r.root.reset();
  r.redop = RedOp::kMax;
  r.checked = false;
  r.label = "run a";
  r.step = "sweep";
  const nlohmann::json k = toJson(r);
  EXPECT_TRUE(k["root"].is_null());
  EXPECT_EQ(k["redop"], "max");
  EXPECT_EQ(k["check"].dump(), R"({"passed":null,"performed":false,"wrong":3})");  // not checked: passed is unknown
  EXPECT_EQ(k["label"], "run a");
  EXPECT_EQ(k["step"], "sweep");
}

TEST(CollectiveRecord, JsonHasEveryFieldOfTheSchemaAndNoOther) {
  const nlohmann::json j = toJson(broadcast());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"algbw_gbps", "backend", "bus_factor",  "busbw_gbps", "bytes",        "check",
                                            "count",      "dtype",   "empty_op_us", "graph",      "host_time_us", "in_place",
                                            "iters",      "kind",    "op",          "processes",  "rank_spread",  "ranks",
                                            "redop",      "root",    "samples_us",  "time_us",    "timer",        "trials"}));
  EXPECT_EQ(j["kind"], "collective");
  EXPECT_EQ(j["dtype"], "int32");
  EXPECT_EQ(j["bytes"].dump(), "4096");  // integers stay integers
  EXPECT_EQ(j["bus_factor"].dump(), "1.0");
  EXPECT_EQ(j["samples_us"].dump(), "[12.5,13.0]");
  EXPECT_EQ(j["empty_op_us"]["median"], 0.03);  // the harness's own time per sample, beside the op's
}

TEST(CollectiveRecord, ReduceScatterOnMpiNamesItsCallAsTheAlgo) {
  CollectiveRecord r = broadcast();
  r.op = "reduce_scatter";
  r.mpiReduceScatter = MpiReduceScatter::kBlock;
  EXPECT_EQ(toJson(r)["algo"], "block");
  r.mpiReduceScatter = MpiReduceScatter::kCounts;
  EXPECT_EQ(toJson(r)["algo"], "counts");
}

// The MPI call's form is written where the backend has two (the runner sets it on MPI records only).
TEST(CollectiveRecord, AnMpiRecordNamesItsCallsFormAndOneWithoutNone) {
  CollectiveRecord r = broadcast();
  EXPECT_FALSE(toJson(r).contains("issue"));
  r.issue = IssueKind::kNonblocking;
  EXPECT_EQ(toJson(r)["issue"], "nonblocking");
  r.issue = IssueKind::kBlocking;
  EXPECT_EQ(toJson(r)["issue"], "blocking");
}

TEST(CollectivesTable, HeaderNamesTheSectionsVariant) {
  EXPECT_EQ(collectivesTableHeader("all_reduce", "float32", "sum", "").substr(0, 29), "#\n# all_reduce  float32  sum\n");
  EXPECT_EQ(collectivesTableHeader("reduce_scatter", "float32", "max", "--mpi-reduce-scatter counts").substr(0, 62),
            "#\n# reduce_scatter  float32  max  --mpi-reduce-scatter counts\n");
}

TEST(CollectivesTable, RowShowsEachPlacementFromItsRecord) {
  const CollectiveRecord r = broadcast();
  EXPECT_EQ(
      collectivesTableRow(r, std::nullopt),
      "          4096         1024    int32   none     2     12.50    0.25    0.25      3       n/a                       \n");
  CollectiveRecord unchecked = r;
  unchecked.checked = false;
  unchecked.root.reset();
  unchecked.redop = RedOp::kSum;
  EXPECT_EQ(
      collectivesTableRow(std::nullopt, unchecked),
      "          4096         1024    int32    sum    -1       n/a                            12.50    0.25    0.25    N/A\n");
}

}  // namespace ts

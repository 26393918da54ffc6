// The kernel and kernel_ceiling records as the schema and the reports read them, and the console row of a
// kernel rendered from its record.
#include <gtest/gtest.h>

#include <limits>

#include "bench/kernels/ceiling_record.h"
#include "bench/kernels/kernel_record.h"
#include "bench/kernels/kernels_table.h"

namespace ts {
namespace {

KernelRecord gemm() {
  KernelRecord r;
  r.op = "gemm";
  r.shape = {"attn.qkv", {{"M", 128}, {"N", 384}, {"K", 128}}};
  r.flops = 12582912;
  r.bytes = 327680;
  r.time.median = 64;
  r.samplesUs = {64, 70};
  r.tflops = 0.196608;
  r.gbps = 5.12;
  r.intensity = 38.4;
  r.check = {true, 3.5e-6, 1e-4};
  return r;
}

}  // namespace

TEST(KernelRecord, WithoutCeilingsTheRooflineAndClockAreNull) {
  const nlohmann::json j = toJson(gemm());
  EXPECT_TRUE(j["roofline"].is_null());
  EXPECT_TRUE(j["clock_mhz"].is_null());
  EXPECT_EQ(j["ceiling_suspect"], false);
  EXPECT_EQ(j["shape"].dump(), R"({"K":128,"M":128,"N":384})");
  EXPECT_EQ(j["check"].dump(), R"({"max_rel_err":3.5e-06,"passed":true,"performed":true,"tolerance":0.0001})");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["dtype"], "float32");
  for (const char* absent : {"ceiling_suspect_cause", "details", "label", "step"}) EXPECT_FALSE(j.contains(absent)) << absent;
}

TEST(KernelRecord, ASuspectCaseNamesItsCauseAndTheCeilingItHadRemeasured) {
  KernelRecord r = gemm();
  r.roofline = KernelRoofline{CeilingKind::kMemory, 2.5, 400, MemoryLevel::kL2, 0.1, 1.5, CeilingKind::kMemory};
  r.suspect = SuspectCause::kCacheResidency;
  r.clockMhz = 2400;
  r.details = {{"algo", "blocked"}};
  r.label = "a";
  r.step = "k";
  const nlohmann::json j = toJson(r);
  EXPECT_EQ(j["roofline"].dump(), R"({"attainable_tflops":0.1,"bound":"memory","ceiling_gbps":400.0,"ceiling_tflops":2.5,)"
                                  R"("fraction_of_ceiling":1.5,"memory_level":"l2","rechecked_ceiling":"memory"})");
  EXPECT_EQ(j["ceiling_suspect"], true);
  EXPECT_EQ(j["ceiling_suspect_cause"], "cache_residency");
  EXPECT_EQ(j["clock_mhz"].dump(), "2400.0");
  EXPECT_EQ(j["details"]["algo"], "blocked");
  EXPECT_EQ(j["label"], "a");
  EXPECT_EQ(j["step"], "k");
}

TEST(KernelsTable, RowShowsTheBoundAndFractionOfTheRecord) {
  KernelRecord r = gemm();
  EXPECT_EQ(kernelsTableRow(r),
            "  gemm               attn.qkv           M=128 N=384 K=128                                    64.00     196.61"
            "      5.12       -        -    3.50e-06     ok\n");
  r.roofline = KernelRoofline{CeilingKind::kMemory, 2.5, 400, MemoryLevel::kL2, 0.1, 1.5, std::nullopt};
  r.suspect = SuspectCause::kUnexplained;
  r.check.passed = false;
  EXPECT_EQ(kernelsTableRow(r),
            "  gemm               attn.qkv           M=128 N=384 K=128                                    64.00     196.61"
            "      5.12      L2    150%!    3.50e-06 FAILED\n");
  r.roofline->bound = CeilingKind::kCompute;
  r.suspect.reset();
  EXPECT_NE(kernelsTableRow(r).find(" compute     150%  "), std::string::npos);
}

TEST(KernelCeilingRecord, OnlyAMemoryCeilingStatesItsLevelAndDramsCapacityIsNull) {
  KernelCeilingRecord c;
  c.value = 1.25;
  c.source = "gemm square 512 float32 (OpenBLAS)";
  c.warmup = 2;
  c.trials = 5;
  nlohmann::json j = toJson(c);
  EXPECT_EQ(j["unit"], "TFLOP/s");
  EXPECT_TRUE(j["others_cpu_fraction"].is_null());
  for (const char* absent : {"level", "working_set_bytes", "capacity_bytes", "recheck_of", "planted_fault_scale", "step"})
    EXPECT_FALSE(j.contains(absent)) << absent;

  c.ceiling = CeilingKind::kMemory;
  c.workingSetBytes = 1 << 20;
  c.othersCpuFraction = 0.25;
  c.recheckOf = "softmax attn.softmax";
  c.plantedFaultScale = 0.001;
  c.step = "kernels";
  j = toJson(c);
  EXPECT_EQ(j["unit"], "GB/s");
  EXPECT_EQ(j["level"], "dram");
  EXPECT_TRUE(j["capacity_bytes"].is_null());
  EXPECT_EQ(j["working_set_bytes"].dump(), "1048576.0");
  EXPECT_EQ(j["others_cpu_fraction"].dump(), "0.25");
  EXPECT_EQ(j["recheck_of"], "softmax attn.softmax");
  EXPECT_EQ(j["planted_fault_scale"].dump(), "0.001");
  EXPECT_EQ(j["step"], "kernels");
  c.level = MemoryLevel::kL1;
  c.capacityBytes = 49152;
  EXPECT_EQ(toJson(c)["capacity_bytes"].dump(), "49152.0");
}

}  // namespace ts

// MFU names its peaks: the measured GEMM ceiling (its precision, source, clock) and the datasheet entry
// scaled to the recorded clock; a figure above 100% of its peak is marked suspect, with its cause.
#include <gtest/gtest.h>

#include "bench/train/train_mfu.h"

namespace ts {

TEST(TrainMfu, NamesBothPeaksAndKeepsTheFlatFields) {
  const MeasuredPeak measured{400, Precision::kBFloat16, "cuBLASLt gemm square 8192 bfloat16, best of 5 after 2 warm-up", 1755.0,
                              false};
  const DatasheetPeak sheet{ComputePeak{"H100 SXM5", 989.4, 1980}, Precision::kBFloat16};
  const nlohmann::json m = mfuBlock(200, measured, sheet, 1755.0);
  EXPECT_DOUBLE_EQ(m["measured"]["mfu"].get<double>(), 0.5);
  EXPECT_EQ(m["measured"]["precision"], "bfloat16");
  EXPECT_EQ(m["measured"]["ceiling_suspect"], false);
  const double atClock = 989.4 * 1755 / 1980;
  EXPECT_EQ(m["datasheet"]["entry"], "H100 SXM5");
  EXPECT_DOUBLE_EQ(m["datasheet"]["tflops"].get<double>(), atClock);
  EXPECT_DOUBLE_EQ(m["datasheet"]["datasheet_tflops"].get<double>(), 989.4);
  EXPECT_DOUBLE_EQ(m["datasheet"]["mfu"].get<double>(), 200 / atClock);
  // The fields the reports read before the peaks were named, unchanged in meaning.
  EXPECT_DOUBLE_EQ(m["measured_ceiling_tflops"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(m["vs_measured"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m["datasheet_peak_tflops"].get<double>(), atClock);
  EXPECT_EQ(m["datasheet_gpu"], "H100 SXM5");
  EXPECT_EQ(m["ceiling_suspect"], false);
  const std::string line = mfuConsoleLine(m);
  EXPECT_NE(line.find("# MFU 50.0% of the measured GEMM ceiling (400 TFLOP/s bfloat16"), std::string::npos) << line;
  EXPECT_NE(line.find("of the H100 SXM5 datasheet peak (bfloat16 989.4 TFLOP/s at 1980 MHz boost, 877 at the 1755 MHz read)"),
            std::string::npos)
      << line;
  EXPECT_TRUE(mfuSuspects(m).empty());
}

TEST(TrainMfu, AnUnknownClockLeavesTheDatasheetAtBoost) {
  const nlohmann::json m =
      mfuBlock(100, std::nullopt, DatasheetPeak{ComputePeak{"A100", 312, 1410}, Precision::kFloat16}, nullptr);
  EXPECT_DOUBLE_EQ(m["datasheet"]["tflops"].get<double>(), 312);
  EXPECT_TRUE(m["measured"].is_null() && m["vs_measured"].is_null() && m["measured_ceiling_tflops"].is_null());
}

TEST(TrainMfu, NothingToCompareWithOnACpuWithoutACeiling) {
  const nlohmann::json m = mfuBlock(0.02, std::nullopt, std::nullopt, nullptr);
  EXPECT_TRUE(m["measured"].is_null() && m["datasheet"].is_null() && m["vs_datasheet"].is_null());
  EXPECT_EQ(mfuConsoleLine(m), "");
}

TEST(TrainMfu, AboveItsPeakIsSuspectWithItsCause) {
  MeasuredPeak measured{0.01, Precision::kFloat32,        "gemm square 2048 float32 (OpenBLAS)", nullptr,
                        true, SuspectCause::kPlantedFault};
  const nlohmann::json m = mfuBlock(0.02, measured, std::nullopt, nullptr);
  EXPECT_EQ(m["ceiling_suspect"], true);
  EXPECT_EQ(m["measured"]["ceiling_suspect_cause"], "planted_fault");
  EXPECT_EQ(m["measured"]["rechecked"], true);
  EXPECT_NE(mfuConsoleLine(m).find("# MFU 200.0%! of the measured GEMM ceiling"), std::string::npos);
  const auto suspects = mfuSuspects(m);
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].cause, SuspectCause::kPlantedFault);
  const nlohmann::json over =
      mfuBlock(1000, std::nullopt, DatasheetPeak{ComputePeak{"H100 PCIe", 756, 1755}, Precision::kBFloat16}, 1755.0);
  EXPECT_EQ(over["datasheet"]["ceiling_suspect_cause"], "datasheet_mismatch");
}

}  // namespace ts

#pragma once
// A training run's MFU, each figure naming the peak it is against: `measured`, the GEMM ceiling this run
// measured (its precision, source and clock), and `datasheet`, the table entry's dense peak in the run's
// precision scaled to the SM clock read at the end of the run (datasheet x clock / boost clock). An MFU
// above 100% is impossible by definition: the caller re-measures the GEMM ceiling once, and a figure
// still above its peak is marked ceiling_suspect. The record's flat fields (measured_ceiling_tflops,
// vs_measured, datasheet_peak_tflops, datasheet_gpu, vs_datasheet, clock_mhz) stay as they were.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/kernels/roofline.h"
#include "bench/train/compute_peaks.h"

namespace ts {

struct MeasuredPeak {
  double tflops = 0;
  Precision precision = Precision::kFloat32;  // the GEMM's (float32 on the CPU; the run's on a GPU)
  std::string source;                         // which GEMM, how many trials
  nlohmann::json clockMhz;                    // the clock it was measured at, or null
  bool rechecked = false;
  SuspectCause cause = SuspectCause::kUnexplained;  // why an MFU above it would be (bench/kernels/roofline.h)
};

struct DatasheetPeak {
  ComputePeak peak;  // the table entry, in the run's precision
  Precision precision = Precision::kFloat32;
};

// The `mfu` block for `perDeviceTflops` achieved at `clockMhz` (a number, or null: the datasheet figure
// is then the boost clock's).
nlohmann::json mfuBlock(double perDeviceTflops, const std::optional<MeasuredPeak>& measured,
                        const std::optional<DatasheetPeak>& datasheet, const nlohmann::json& clockMhz);
// "# MFU ..." for the console, `!` after a suspect figure; "" when there is no figure.
std::string mfuConsoleLine(const nlohmann::json& mfu);
// The figures of the block above 100% of their peak, for suspectWarning (bench/kernels/roofline.h).
std::vector<SuspectFigure> mfuSuspects(const nlohmann::json& mfu);

}  // namespace ts

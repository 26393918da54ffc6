#include "bench/train/train_mfu.h"

#include <fmt/format.h>

namespace ts {
namespace {

std::string percent(const nlohmann::json& figure) {
  return fmt::format("{:.1f}%{}", 100 * figure["mfu"].get<double>(), figure["ceiling_suspect"].get<bool>() ? "!" : "");
}

}  // namespace

nlohmann::json mfuBlock(double perDeviceTflops, const std::optional<MeasuredPeak>& measured,
                        const std::optional<DatasheetPeak>& datasheet, const nlohmann::json& clockMhz) {
  nlohmann::json m = nullptr, d = nullptr;
  if (measured && measured->tflops > 0) {
    const double mfu = perDeviceTflops / measured->tflops;
    m = {{"tflops", measured->tflops},
         {"precision", nameOf(measured->precision)},
         {"source", measured->source},
         {"clock_mhz", measured->clockMhz},
         {"mfu", mfu},
         {"rechecked", measured->rechecked},
         {"ceiling_suspect", aboveCeiling(mfu)}};
    if (aboveCeiling(mfu)) m["ceiling_suspect_cause"] = std::string(suspectCauseName(measured->cause));
  }
  if (datasheet) {
    const ComputePeak& p = datasheet->peak;
    const double atClock = clockMhz.is_number() ? p.tflops * clockMhz.get<double>() / p.boostMhz : p.tflops;
    const double mfu = perDeviceTflops / atClock;
    d = {{"entry", p.gpu},
         {"precision", nameOf(datasheet->precision)},
         {"datasheet_tflops", p.tflops},
         {"boost_clock_mhz", p.boostMhz},
         {"clock_mhz", clockMhz},
         {"tflops", atClock},
         {"mfu", mfu},
         {"ceiling_suspect", aboveCeiling(mfu)}};
    if (aboveCeiling(mfu)) d["ceiling_suspect_cause"] = std::string(suspectCauseName(SuspectCause::kDatasheetMismatch));
  }
  // The flat fields of earlier records, read from the two blocks.
  auto field = [](const nlohmann::json& block, const char* key) { return block.is_null() ? nlohmann::json() : block[key]; };
  return {{"measured_ceiling_tflops", field(m, "tflops")},
          {"vs_measured", field(m, "mfu")},
          {"datasheet_peak_tflops", field(d, "tflops")},  // per device, at the clock
          {"datasheet_gpu", field(d, "entry")},
          {"vs_datasheet", field(d, "mfu")},
          {"clock_mhz", clockMhz},
          {"measured", m},
          {"datasheet", d},
          {"ceiling_suspect",
           (!m.is_null() && m["ceiling_suspect"].get<bool>()) || (!d.is_null() && d["ceiling_suspect"].get<bool>())}};
}

std::string mfuConsoleLine(const nlohmann::json& mfu) {
  std::string line;
  if (const auto& m = mfu["measured"]; !m.is_null()) {
    line += fmt::format("{} of the measured GEMM ceiling ({:.4g} TFLOP/s {}: {}{})", percent(m), m["tflops"].get<double>(),
                        m["precision"].get<std::string>(), m["source"].get<std::string>(),
                        m["clock_mhz"].is_number() ? fmt::format(", at {:.0f} MHz", m["clock_mhz"].get<double>()) : "");
  }
  if (const auto& d = mfu["datasheet"]; !d.is_null()) {
    line += fmt::format("{}{} of the {} datasheet peak ({} {:.4g} TFLOP/s at {:.0f} MHz boost{})", line.empty() ? "" : "; ",
                        percent(d), d["entry"].get<std::string>(), d["precision"].get<std::string>(),
                        d["datasheet_tflops"].get<double>(), d["boost_clock_mhz"].get<double>(),
                        d["clock_mhz"].is_number() ? fmt::format(", {:.4g} at the {:.0f} MHz read", d["tflops"].get<double>(),
                                                                 d["clock_mhz"].get<double>())
                                                   : ", the clock unknown");
  }
  return line.empty() ? "" : "# MFU " + line;
}

std::vector<SuspectFigure> mfuSuspects(const nlohmann::json& mfu) {
  std::vector<SuspectFigure> out;
  for (const char* key : {"measured", "datasheet"}) {
    const auto& f = mfu[key];
    if (f.is_null() || !f["ceiling_suspect"].get<bool>()) continue;
    const bool measured = std::string(key) == "measured";
    out.push_back({measured ? "MFU against the measured GEMM ceiling" : "MFU against the datasheet peak", f["mfu"].get<double>(),
                   suspectCauseFromName(f["ceiling_suspect_cause"].get<std::string>())});
  }
  return out;
}

}  // namespace ts

#include "bench/scale/scale_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/terminal_text.h"
#include "bench/scale/scale_options.h"

namespace ts {

namespace {
// Whether the study's points train to a target (then the table gives each point's time to it).
bool toTarget(const ScaleOptions& o) {
  for (const std::string& a : o.trainArgs)
    if (a.rfind("--target-accuracy", 0) == 0 || a.rfind("--target-loss", 0) == 0) return true;
  return false;
}
}  // namespace

std::string scaleTableHeader(const ScaleOptions& o, const std::vector<int>& ranks, const std::filesystem::path& pointsDir) {
  return fmt::format("# scale ({}): {} ranks, batch {} {}; each point's result and log in {}\n", nameOf(o.mode),
                     fmt::join(ranks, ","), o.batch, o.mode == ScaleMode::kWeak ? "per rank" : "global", pointsDir.string()) +
         fmt::format("# {:>6} {:>8} {:>12} {:>14} {:>9} {:>10} {:>12} {:>12}{}  {}\n", "ranks", "batch", "step(ms)", "items/s",
                     "speedup", "efficiency", "compute(ms)", "exposed(ms)",
                     toTarget(o) ? fmt::format(" {:>11} {:>8}", "to target", "steps") : "", "layout");
}

std::string scaleTableRow(const ScalingRecord& r) {
  if (!r.figures) return fmt::format("  {:>6} {:>8}  failed: {}\n", r.ranks, r.globalBatch, r.error);
  const ScalingFigures& f = *r.figures;
  // Time to target, where the study trains to one: MLPerf's measure, which more ranks may not improve.
  std::string target;
  if (f.target)
    target = f.target->reached ? fmt::format(" {:>10.3f}s {:>8}", f.target->seconds, f.target->steps)
                               : fmt::format(" {:>11} {:>8}", "not reached", "-");
  return fmt::format("  {:>6} {:>8} {:>12.3f} {:>14.1f} {:>9.2f} {:>9.1f}% {:>12.3f} {:>12.3f}{}  {}\n", r.ranks, r.globalBatch,
                     f.stepTimeUs / 1e3, f.throughputPerS, f.speedup, 100 * f.efficiency, f.breakdown.compute / 1e3,
                     f.breakdown.exposedCommunication / 1e3, target, r.train ? r.train->layout : "");
}

std::string scaleTransportLine(const TransportSetting& t) {
  std::string env;
  for (const auto& [k, v] : t.env) env += fmt::format(" {}={}", k, v);
  return printableLines(fmt::format("# over {}: {}{}\n", t.name, t.description, env));
}

}  // namespace ts

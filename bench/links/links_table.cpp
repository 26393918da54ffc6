#include "bench/links/links_table.h"

#include <fmt/format.h>

#include "base/units.h"
#include "bench/links/links_options.h"

namespace ts {

std::string hostMemoryTableHeader(std::uint64_t arrayBytes, int threadsPerProcess) {
  return fmt::format("#\n# host memory: STREAM-like, 3 arrays of {} per process, {} thread(s) per process\n",
                     formatBytes(arrayBytes), threadsPerProcess) +
         fmt::format("# {:<24} {:>9} {:>12} {:>12} {:>12} {:>7}\n", "host", "processes", "bytes", "kernel", "GB/s", "#wrong");
}

std::string hostMemoryTableRow(const LinkMeasurement& m) {
  const auto& f = std::get<HostMemoryFields>(m.fields);
  const std::string kernel = m.test.substr(m.test.rfind('_') + 1);  // host_memory_copy -> copy
  return fmt::format("  {:<24} {:>9} {:>12} {:>12} {:>12.2f} {:>7}\n", f.host, f.processes, m.bytes, kernel,
                     bandwidthOf(m).value_or(0), m.wrong);
}

std::string mpiPairsTableHeader(const LinksOptions& o, std::size_t pairs) {
  return fmt::format(
             "#\n# MPI point-to-point: {} pair(s) (--pairs {}); latency: {} ping-pong x {}; bandwidth: {} x window {} x {} "
             "after {} warm-up (bytes of all timed windows over their time, as osu_bw)\n",
             pairs, o.pairs, formatBytes(o.latencyBytes), o.latencyIters, formatBytes(o.bandwidthBytes), o.window, o.iters,
             o.warmup) +
         fmt::format("# {:<22} {:<22} {:<8} {:>12} {:>10} {:>11} {:>7}\n", "src", "dst", "link", "latency(us)", "bw(GB/s)",
                     "bibw(GB/s)", "#wrong");
}

namespace {
// A record's figure as its cell shows it: two decimals, and a ! when it landed above its link's peak.
std::string figureCell(const LinkMeasurement& m) { return fmt::format("{:.2f}{}", figureOf(m), m.suspect ? "!" : ""); }
}  // namespace

std::string mpiPairsTableRow(int a, int b, const std::array<LinkMeasurement, 3>& tests) {
  const auto& f = std::get<MpiPairFields>(tests[0].fields);
  long long wrong = 0;
  for (const LinkMeasurement& m : tests) wrong += m.wrong;
  return fmt::format("  {:<22} {:<22} {:<8} {:>12} {:>10} {:>11} {:>7}\n", fmt::format("{} ({})", a, f.srcHost),
                     fmt::format("{} ({})", b, f.dstHost), tests[0].link.type, figureCell(tests[0]), figureCell(tests[1]),
                     figureCell(tests[2]), wrong);
}

std::string outlierLines(const LinkOutliersRecord& r) {
  std::string out;
  for (const PairFigure& x : r.outliers)
    out += fmt::format("# outlier: {} {} -> {} ({} -> {}): {:.3g} {} against a median of {:.3g} over {} {} pairs\n", r.test,
                       x.src, x.dst, x.srcHost, x.dstHost, x.value, r.latency ? "us" : "GB/s", r.median, r.pairs, r.linkType);
  return out;
}

}  // namespace ts

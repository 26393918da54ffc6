#include "bench/kernels/kernels_table.h"

#include <fmt/format.h>

namespace ts {
namespace {

// The roofline's two columns: the ceiling that bounds the case (compute, or the memory level its bytes
// stream at) and its fraction of it, marked ! when still above it after the re-check.
std::pair<std::string, std::string> rooflineCells(const KernelRecord& r) {
  if (!r.roofline) return {"-", "-"};
  const KernelRoofline& roof = *r.roofline;
  std::string bound = roof.bound == CeilingKind::kCompute ? "compute" : std::string(memoryLevelLabel(roof.memoryLevel));
  return {bound, fmt::format("{:.0f}%{}", 100 * roof.fraction, r.suspect ? "!" : "")};
}

}  // namespace

std::string kernelsTableHeader() {
  return fmt::format("# {:<18} {:<18} {:<46} {:>11} {:>10} {:>9} {:>7} {:>8} {:>11} {:>6}\n", "op", "shape", "dims", "time(us)",
                     "GFLOP/s", "GB/s", "bound", "of roof", "max_rel_err", "check");
}

std::string kernelsTableRow(const KernelRecord& r) {
  const auto [bound, fraction] = rooflineCells(r);
  return fmt::format("  {:<18} {:<18} {:<46} {:>11.2f} {:>10.2f} {:>9.2f} {:>7} {:>8} {:>11.2e} {:>6}\n", r.op, r.shape.name,
                     dimsText(r.shape), r.time.median, r.tflops * 1e3, r.gbps, bound, fraction, r.check.maxRelErr,
                     r.check.passed ? "ok" : "FAILED");
}

std::string kernelsSkippedRow(std::string_view op, const std::string& shape) {
  return fmt::format("  {:<18} {:<18} (no CUDA implementation yet: skipped)\n", op, shape);
}

std::string dimsText(const KernelShape& s) {
  std::string out;
  for (const auto& [k, v] : s.dims) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  return out;
}

}  // namespace ts

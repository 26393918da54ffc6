#include "bench/collectives/collectives_table.h"

#include <fmt/format.h>

namespace ts {
namespace {

std::string placementCells(const std::optional<CollectiveRecord>& r) {
  if (!r) return fmt::format(" {:>9} {:>7} {:>7} {:>6}", "n/a", "", "", "");
  const std::string wrong = r->checked ? std::to_string(r->wrong) : "N/A";
  return fmt::format(" {:>9.2f} {:>7.2f} {:>7.2f} {:>6}", r->time.median, r->algbwGbps, r->busbwGbps, wrong);
}

}  // namespace

std::string collectivesTableHeader(const std::string& op, const std::string& dtype, const std::string& redop,
                                   const std::string& variant) {
  std::string h =
      fmt::format("#\n# {}  {}{}{}\n", op, dtype, redop.empty() ? "" : "  " + redop, variant.empty() ? "" : "  " + variant);
  h += fmt::format("# {:>12} {:>12} {:>8} {:>6} {:>5}  {:^31}  {:^31}\n", "", "", "", "", "", "out-of-place", "in-place");
  h += fmt::format("# {:>12} {:>12} {:>8} {:>6} {:>5} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>6}\n", "size", "count", "type",
                   "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  h += fmt::format("# {:>12} {:>12} {:>8} {:>6} {:>5} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>6}\n", "(B)", "(elements)", "",
                   "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return h;
}

std::string collectivesTableRow(const std::optional<CollectiveRecord>& oop, const std::optional<CollectiveRecord>& ip) {
  const CollectiveRecord& any = oop ? *oop : *ip;
  const std::string redop = any.redop ? std::string(redOpName(*any.redop)) : "none";
  const std::string root = any.root ? std::to_string(*any.root) : "-1";
  return fmt::format("  {:>12} {:>12} {:>8} {:>6} {:>5}{}{}\n", any.bytes, any.count, dtypeName(any.dtype), redop, root,
                     placementCells(oop), placementCells(ip));
}

std::string collectivesTableFooter(double avgBusbwGbps, std::size_t wrong, int ranks) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:.4g} GB/s{}\n", wrong, wrong ? "FAILED" : "OK",
                     avgBusbwGbps, ranks == 1 ? " (one rank: no link measured)" : "");
}

std::string oneRankNotice() {
  return "# one rank: a collective over one rank crosses no link (busbw 0; in-place figures time a call with nothing to "
         "move).\n# To measure links, launch 2 or more: mpirun --oversubscribe -np 2 trainscope collectives ..., or one "
         "process each with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set\n";
}

}  // namespace ts

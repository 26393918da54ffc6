#pragma once
// The nccl-tests-style table of `trainscope collectives`: one section per (op, dtype, redop, MPI call), one row per
// size with the out-of-place and in-place figures side by side. Time is the median over iterations of the
// slowest rank.
#include <optional>
#include <string>

#include "bench/collectives/collective_record.h"

namespace ts {

// `variant`: what else sets the section apart ("--mpi-reduce-scatter counts"), or "".
std::string collectivesTableHeader(const std::string& op, const std::string& dtype, const std::string& redop,
                                   const std::string& variant);
// outOfPlace / inPlace: the records, or nullopt where that placement was not run (not both).
std::string collectivesTableRow(const std::optional<CollectiveRecord>& outOfPlace,
                                const std::optional<CollectiveRecord>& inPlace);
// `ranks`: the sweep's; with one, the average says that no link was measured.
std::string collectivesTableFooter(double avgBusbwGbps, std::size_t wrong, int ranks);

// Said once before a one-rank sweep (a run started without mpirun): a collective over one rank crosses no
// link, so its busbw is 0 by definition and its in-place figures time a call with nothing to move.
std::string oneRankNotice();

}  // namespace ts

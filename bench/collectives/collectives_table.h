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
std::string collectivesTableFooter(double avgBusbwGbps, std::size_t wrong);

}  // namespace ts

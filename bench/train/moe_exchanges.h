#pragma once
// An expert-parallel mixture's all-to-alls over the timed steps, per layer and direction (layers/moe.h's
// MoeExchange), as the train record and the console give them: process 0's own exchanges (it writes the record),
// per call, with bytes counted as the collectives sweep counts an alltoallv's (the busiest rank's buffer) and its
// bus factor, so that a report can set them against the sweep's alltoallv at the same size and ranks.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "workloads/layers/moe.h"
#include "workloads/parallel/expert_parallel.h"

namespace ts {

using ExpertExchanges = std::map<std::string, wl::ExpertExchangeStats>;  // by exchange name (moeExchangeName)

struct MoeExchangeFigures {
  std::int64_t calls = 0, rowsSent = 0;
  std::uint64_t largestBytes = 0;
  // Means per call; nullopt without a call (a run stopped before its first timed step).
  std::optional<double> bytesPerCall, secondsPerCall, busbwGbps;
};

// Layer `layer`'s exchanges in direction `d` among `exchanges`, over an expert-parallel group of `ranks`.
MoeExchangeFigures moeExchangeFigures(const ExpertExchanges& exchanges, const std::string& layer, wl::MoeExchange d, int ranks);

}  // namespace ts

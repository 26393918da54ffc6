#pragma once
// Stragglers in a `train` record: every rank's arrival skew at the collectives of its groups. The k-th
// collective a group ("dp0", "tp1") launches is one operation on every member; a member's skew is how much
// later than the group's first member it launched it, on clocks aligned at a barrier before the steps.
// A rank's skew of a step is its largest at that step's collectives: a rank held up once a step is late at the
// first collective after the hold-up, and every collective right after it (the loss's mean after the gradients')
// finds the ranks together, so a median over collectives would fall with their count per step. A rank whose median
// step skew is above the threshold and over 3x the median of the other ranks' is named late: the rule
// `trainscope analyze` applies to a trace (reports/traces/analyze.py), here without one.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/parallel/comm_tracker.h"

namespace ts {

class Bootstrap;

struct RankSkew {
  int rank = 0;
  std::size_t collectives = 0;             // of its groups' operations with another member to compare with
  double medianSkewUs = 0, maxSkewUs = 0;  // over its steps' skews (each its largest in the step); the largest
  bool late = false;
};

struct ArrivalSkew {
  double thresholdMs = 1.0;
  std::vector<int> lateRanks;
  std::vector<RankSkew> ranks;  // by rank
};
// The record's `stragglers` block: {"threshold_ms", "late_ranks", "ranks": [...]}.
nlohmann::json toJson(const ArrivalSkew& skew);

// Per rank, per group, its collectives' launch times in launch order (seconds since the origin).
struct RankLaunches {
  int rank = 0;
  std::vector<std::pair<std::string, std::vector<double>>> groups;
  // Per group, each collective's launch to observed completion, in the same order (bench/train/peer_waits.h).
  std::map<std::string, std::vector<double>> seconds = {};
  // Per group, the timed step each collective was part of, in the same order; a group without: each its own step.
  std::map<std::string, std::vector<std::int64_t>> steps = {};
};
// Every rank's launches, exchanged: collective over every process; `originS` is this rank's steady-clock time at
// the common barrier. Send/recv are between two stages, not a group's operation: left out.
std::vector<RankLaunches> gatherLaunches(Bootstrap& boot, const std::vector<wl::CollectiveTiming>& mine, double originS);

ArrivalSkew analyzeArrivalSkew(const std::vector<RankLaunches>& ranks, double thresholdMs);
// The same, as the record's block.
nlohmann::json arrivalSkew(const std::vector<RankLaunches>& ranks, double thresholdMs);

}  // namespace ts

#pragma once
// The per-rank side of a `train` record: every rank's phase times, gathered to process 0 after the last
// step (never during the timed steps), the step time as the slowest rank's, the spread between ranks,
// communication and exposed communication, and the collectives the training issued with their
// achieved bus bandwidth.
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/trainer.h"

namespace ts {

class Bootstrap;

// The statistics block of durations given in seconds, in microseconds.
nlohmann::json usStats(const std::vector<double>& seconds);

// The timed steps of one rank.
struct RankSteps {
  std::vector<double> total, data, forward, backward, sync, optimizer, communication, exposed, pipelineWait;  // seconds
  std::vector<wl::CollectiveTiming> collectives;
  double originS = 0;  // steady clock at the barrier before the steps: launch times are taken from it
  void add(const wl::StepResult& r);
};

struct TrainBreakdown {
  std::vector<double> stepSeconds;  // per timed step: the slowest rank's time
  nlohmann::json fields;            // ranks, phases_us, communication, collectives (process 0's record); measured_bubble with --pp
};

// Collective over every process of the run (each passes its own steps); the result matters on process 0.
// With several ranks it includes `stragglers` (bench/train/arrival_skew.h; late: by more than 1 ms and 5% of
// the median step).
// `mesh` names each rank's place and the size of each group a collective ran in (its bus factor's n).
TrainBreakdown gatherBreakdown(Bootstrap& boot, const wl::Mesh& mesh, const RankSteps& mine);

}  // namespace ts

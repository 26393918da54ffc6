#pragma once
// The per-rank side of a `train` record: every rank's phase times, gathered to process 0 after the last
// step (never during the timed steps), the step time as the slowest rank's, the spread between ranks,
// and the collectives the training issued with their achieved bus bandwidth.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/results/stats.h"
#include "bench/train/arrival_skew.h"
#include "bench/train/peer_waits.h"
#include "workloads/parallel/tracked_op.h"
#include "workloads/trainer.h"

namespace ts {

class Bootstrap;

// The statistics of durations given in seconds, in microseconds (and as the record's block).
Stats usSummary(const std::vector<double>& seconds);
nlohmann::json usStats(const std::vector<double>& seconds);
// 1 - exposed / communication, clamped to [0, 1]; none without communication.
std::optional<double> overlapOf(double communicationS, double exposedS);

// The timed steps of one rank.
struct RankSteps {
  std::vector<double> total, data, forward, backward, sync, optimizer, communication, exposed, pipelineWait;  // seconds
  std::vector<double> forwardCompute, backwardCompute;  // the phases less the communication calls inside them
  std::vector<wl::CollectiveTiming> collectives;
  double originS = 0;  // steady clock at the barrier before the steps: launch times are taken from it
  void add(const wl::StepResult& r);
};

// One rank's medians per step, in seconds.
struct RankRow {
  int rank = 0;
  std::vector<int> coordinates;  // on each axis of the mesh, in its order
  wl::RankWork work;             // per step, what the rank itself computes and updates: its phases' times are per these
  double step = 0, data = 0, compute = 0, sync = 0, communication = 0, exposed = 0, pipelineWait = 0;
  // compute's parts, each its own median (process 0's are the record's phases_us); the forward and backward less the
  // communication calls made inside them, compute alone: what a prediction's compute rates are taken from
  // (reports/predict/compute.py: the rank the step waited for) and its compute is compared with
  double forward = 0, backward = 0, optimizer = 0, forwardCompute = 0, backwardCompute = 0;
  // The exposed communication's two parts (bench/train/peer_waits.h): the median exposed time split in the
  // proportion of the timed steps' totals, so that they add up to it (each part's own median would not: a
  // straggler's waits come in bursts, and the medians of the parts and of their sum are three different steps).
  double waiting = 0, transfer = 0;
  double idle() const;  // the step less compute, data and sync
};

// The collectives of one group's axes, op and size that process 0 issued.
struct CollectiveRow {
  wl::AxisSet group;
  int groupSize = 1;
  wl::TrackedOp op;
  std::size_t bytes = 0;
  std::vector<double> seconds;          // launch to observed completion, each
  std::vector<double> transferSeconds;  // the group's last arrival to observed completion, each
  double algbwGbps = 0, busbwGbps = 0;
  double transferBusbwGbps = 0;  // over the median transfer: what compares with a sweep of the same op and size
};

struct TrainBreakdown {
  std::vector<double> stepSeconds;  // per timed step: the slowest rank's time
  double rankSpread = 0;            // median over the steps of (slowest - fastest) / slowest
  std::vector<RankRow> ranks;
  std::vector<CollectiveRow> collectives;
  std::optional<double> measuredBubble;   // with pipeline stages: the median rank's wait / step
  std::optional<ArrivalSkew> stragglers;  // with several ranks
  // This process's exposed communication per timed step, split (bench/train/peer_waits.h).
  std::vector<double> waitingSeconds, transferSeconds;
};

// Collective over every process of the run (each passes its own steps); the result matters on process 0.
// With several ranks it includes `stragglers` (bench/train/arrival_skew.h; late: by more than 1 ms and 5% of
// the median step).
// `mesh` names each rank's place and the size of each group a collective ran in (its bus factor's n).
// `work` is this rank's own (Trainer::rankWorkPerStep), each row's its rank's.
TrainBreakdown gatherBreakdown(Bootstrap& boot, const wl::Mesh& mesh, const wl::RankWork& work, const RankSteps& mine);

}  // namespace ts

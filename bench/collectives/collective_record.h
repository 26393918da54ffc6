#pragma once
// One collective at one size and placement (kind "collective"), as the sweep measured it. The runner
// fills it; toJson writes the schema's `collective` record and collectives_table.h the console row, both
// from this, so neither reads the other back.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/dtype.h"
#include "bench/collectives/collectives_choices.h"
#include "bench/results/stats.h"
#include "comm/communicator.h"

namespace ts {

// Which process was fastest and slowest by its own median (the record's time is the slowest rank per
// iteration; this shows how far apart the processes were).
struct RankSpread {
  int fastest = 0, slowest = 0;
  double fastestMedianUs = 0, slowestMedianUs = 0;
  // Each process's mean over the iterations, averaged over the processes: OSU's figure (its benchmarks reduce every
  // rank's mean to their average). At small sizes it sits below the slowest rank's median by the barrier's exit skew,
  // which the slowest rank of an iteration carries (issue #40): the figure to set against OSU's.
  double meanOfProcessMeansUs = 0;
};

struct CollectiveRecord {
  std::string op;
  BackendKind backend = BackendKind::kMpi;
  TimerKind timer = TimerKind::kSteadyClock;
  DType dtype = DType::kFloat32;
  std::optional<RedOp> redop;  // reducing ops only
  std::optional<int> root;     // rooted ops only
  int ranks = 0, processes = 0;
  std::size_t bytes = 0, count = 0;
  bool inPlace = false;
  std::optional<MpiReduceScatter> mpiReduceScatter;  // reduce_scatter on MPI: its call, written as the record's algo
  std::optional<IssueKind> issue;                    // MPI: the call's form (--issue); NCCL has one form, and no field
  std::optional<CacheState> cache;                   // MPI: the caches' state each call started from (--cache)
  std::optional<nlohmann::json> alltoallvCounts;     // alltoallv: its per-pair counts (toJson(AlltoallvCounts, ...))
  int graph = 0, iters = 0, trials = 0;
  Stats time, hostTime;           // per iteration (host: per op of a batch), the slowest rank's
  std::vector<double> samplesUs;  // behind time, in order
  Stats emptyOpTime;              // the empty-op baseline: the same loop around no operation, the slowest rank's
  double algbwGbps = 0, busFactor = 0, busbwGbps = 0;
  RankSpread spread;
  bool checked = false;     // the result was checked (untimed) before timing
  long long wrong = 0;      // wrong elements over all ranks, when checked
  std::string label, step;  // "" = absent
};

nlohmann::json toJson(const CollectiveRecord& r);

}  // namespace ts

#include "bench/collectives/collective_record.h"

#include "bench/results/record_json.h"

namespace ts {

nlohmann::json toJson(const CollectiveRecord& r) {
  const std::optional<std::string> redop = r.redop ? std::optional<std::string>(redOpName(*r.redop)) : std::nullopt;
  nlohmann::json j = {
      {"kind", "collective"},
      {"op", r.op},
      {"backend", nameOf(r.backend)},
      {"dtype", std::string(dtypeName(r.dtype))},
      {"redop", orNull(redop)},
      {"root", orNull(r.root)},
      {"ranks", r.ranks},
      {"processes", r.processes},
      {"bytes", r.bytes},
      {"count", r.count},
      {"in_place", r.inPlace},
      {"graph", r.graph},
      {"iters", r.iters},
      {"trials", r.trials},
      {"timer", nameOf(r.timer)},
      {"time_us", toJson(r.time)},
      {"samples_us", r.samplesUs},
      {"host_time_us", toJson(r.hostTime)},
      {"empty_op_us", toJson(r.emptyOpTime)},
      {"algbw_gbps", r.algbwGbps},
      {"bus_factor", r.busFactor},
      {"busbw_gbps", r.busbwGbps},
      {"rank_spread",
       {{"unit", "process"},
        {"fastest", r.spread.fastest},
        {"fastest_median_us", r.spread.fastestMedianUs},
        {"slowest", r.spread.slowest},
        {"slowest_median_us", r.spread.slowestMedianUs},
        {"mean_of_process_means_us", r.spread.meanOfProcessMeansUs}}},
      {"check",
       {{"performed", r.checked},
        {"passed", r.checked ? nlohmann::json(r.wrong == 0) : nlohmann::json(nullptr)},
        {"wrong", r.wrong}}},
  };
  // `algo` names what ran the op where there is a choice: NCCL's algorithm (--algos, set when the variants
  // merge) or reduce_scatter's MPI call, so that the reports tell the two calls apart as they do algorithms.
  if (r.mpiReduceScatter) j["algo"] = std::string(nameOf(*r.mpiReduceScatter));
  if (r.issue) j["issue"] = std::string(nameOf(*r.issue));
  if (r.cache) j["cache"] = std::string(nameOf(*r.cache));
  if (r.cache == CacheState::kCold) j["cache_flush_bytes"] = kCacheFlushBytes;
  if (r.alltoallvCounts) j["alltoallv_counts"] = *r.alltoallvCounts;
  putUnlessEmpty(j, "label", r.label);
  putUnlessEmpty(j, "step", r.step);
  return j;
}

}  // namespace ts

#include "workloads/parallel/expert_parallel.h"

#include <algorithm>
#include <utility>

#include "comm/collectives/collective.h"

namespace ts::wl {

void ExpertExchangeStats::add(const ExpertExchangeStats& o) {
  calls += o.calls;
  rowsSent += o.rowsSent;
  bytes += o.bytes;
  seconds += o.seconds;
  largestBytes = std::max(largestBytes, o.largestBytes);
}

ExpertParallelGroup::ExpertParallelGroup(Communicator& ep, double timeoutS, ProcessGroupId group, int rank)
    : tracker_(ep, timeoutS, group), rank_(rank), ranks_(ep.worldSize()) {}

std::vector<std::int64_t> ExpertParallelGroup::gather(const std::vector<std::int64_t>& mine) {
  // As float64: counts of rows, exact far beyond any batch.
  const std::vector<double> values(mine.begin(), mine.end());
  const std::vector<double> all = tracker_.gather(values);
  std::vector<std::int64_t> out(all.size());
  std::transform(all.begin(), all.end(), out.begin(), [](double v) { return static_cast<std::int64_t>(v); });
  return out;
}

void ExpertParallelGroup::exchange(const std::string& what, const float* send, float* recv, const ExchangeMatrix& m,
                                   std::size_t rowElems) {
  const CollectiveCall call{.collective = &collectives::alltoallv(),
                            .send = send,
                            .recv = recv,
                            .count = rowElems,
                            .dtype = DType::kFloat32,
                            .exchange = &m};
  const int id = tracker_.start(call, what);  // the trace span says whose exchange it is
  tracker_.wait(id);
  ExpertExchangeStats& s = exchanges_[what];
  const std::uint64_t bytes = m.busiest() * rowElems * sizeof(float);
  ++s.calls;
  s.rowsSent += static_cast<std::int64_t>(m.sent(rank_));
  s.bytes += bytes;
  s.largestBytes = std::max(s.largestBytes, bytes);
  s.seconds += tracker_.seconds(id);  // the tracker's own timing of it, as the step's collectives'
}

std::map<std::string, ExpertExchangeStats> ExpertParallelGroup::takeExchanges() { return std::exchange(exchanges_, {}); }

}  // namespace ts::wl

#pragma once
// The expert-parallel group's exchanges (Megatron's all-to-all token dispatcher): a mixture of experts asks for them
// through StepContext::experts, on the critical path, so all of their time is exposed communication. Each
// exchange is an alltoallv over the group (the per-pair rows come from the routing: layers/moe.h), each all-gather
// the rows each rank routes to each expert. What each mixture exchanged is kept per layer and direction for the
// record: the calls, the rows and bytes moved, and the time.
#include <map>
#include <string>
#include <vector>

#include "workloads/layers/layer.h"
#include "workloads/parallel/comm_tracker.h"

namespace ts::wl {

// One mixture's exchanges in one direction ("h.0.moe dispatch"), summed over the calls it made.
struct ExpertExchangeStats {
  std::int64_t calls = 0;
  std::int64_t rowsSent = 0;               // rows this rank sent, to itself too (its own rows stay in place but are counted)
  std::uint64_t bytes = 0;                 // the calls' bytes as the collectives sweep counts them (the busiest rank's buffer)
  double seconds = 0;                      // launch to completion, summed
  std::uint64_t largestBytes = 0;          // the largest call's
  void add(const ExpertExchangeStats& o);  // o's calls after these
};

class ExpertParallelGroup final : public ExpertExchange {
 public:
  // rank: this rank's place in the group (the mesh's coordinate over kExpertAxes).
  ExpertParallelGroup(Communicator& ep, double timeoutS, ProcessGroupId group, int rank);
  void install(StepContext& ctx) { ctx.experts = this; }
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  std::vector<std::int64_t> gather(const std::vector<std::int64_t>& mine) override;
  void exchange(const std::string& what, const float* send, float* recv, const ExchangeMatrix& m, std::size_t rowElems) override;
  // The sum of v over the group (the gradient norm's experts, which each rank holds different ones of).
  double sum(double v) { return tracker_.sum(v, true); }
  StepComm takeStepComm() { return tracker_.take(); }
  // What each mixture exchanged since the last call, by its name; cleared.
  std::map<std::string, ExpertExchangeStats> takeExchanges();

 private:
  CommTracker tracker_;
  int rank_, ranks_;
  std::map<std::string, ExpertExchangeStats> exchanges_;
};

}  // namespace ts::wl

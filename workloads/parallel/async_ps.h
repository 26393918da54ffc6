#pragma once
// The asynchronous parameter server with bounded staleness (--sync ps-async --staleness S): stale
// synchronous parallel (Ho et al., 2013). The parameters are split into shards (chunk k of every gradient
// bucket, buckets.h), each held by one server with its optimizer state; servers are dedicated ranks
// (--ps-servers N: the last N data-parallel ranks, which train nothing) or the first --ps-shards workers.
//
//   worker, step c:  wait until every shard it holds is at version >= c - S (version v: the updates of
//                    clocks 0..v-1 applied), taking the newest values that have arrived; forward and
//                    backward on its own batch; send shard k of its gradient to server k, tagged by order
//                    (clock c), without waiting for the server.
//   server, clock c: once every worker's clock-c gradient is in, their sum (in worker order: the same
//                    bits on every run) is the update's gradient; the optimizer steps the shard (the
//                    learning rate of step c); version c + 1 goes to every worker.
//
// No rank waits for another beyond that: a worker may run up to S steps ahead of the slowest update it
// uses, and nothing is all-reduced per step (each worker's record has its own batches' loss and gradient
// norm). S = 0 is the synchronous parameter server: every step uses every earlier update. Messages move on
// the data-parallel communicator's point-to-point sends and receives; every place the engine waits, it
// also progresses both of the rank's roles (pump), so a rank that is a worker and a server never blocks
// the others while it waits. After the last step every server has applied every clock and every worker
// holds the final values (finish), so the run's parameter norms are the servers' result.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workloads/parallel/buckets.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

// The staleness a run's workers saw: per step, c minus the oldest shard version that step used.
struct StalenessCounts {
  std::vector<std::int64_t> counts;  // counts[s]: steps that ran s versions behind
  void add(int s, std::int64_t steps = 1);
  double mean() const;
  int max() const;
};

class AsyncPsSync final : public GradientSync {
 public:
  // dp: every rank of the run (workers, then dedicated servers); steps: the clocks the run trains.
  AsyncPsSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, std::int64_t steps, double timeoutS);
  ~AsyncPsSync() override;
  void beforeBackward(StepContext& ctx, bool last) override;
  void afterBackward(bool last) override;  // the last micro-batch: the gradient's shards sent to their servers
  std::vector<Param*> updateParams() override { return pointersTo(pieces_); }  // the served shard's
  double globalSumOfSquares(double local) override { return local; }           // each worker its own
  void afterUpdate() override {}

  bool worker() const { return worker_; }
  int workers() const { return workers_; }
  // The update of a clock on this server's shard: runs the optimizer on updateParams(), whose gradients
  // then hold the workers' sum (set by the trainer: the optimizer, the learning rate of that step).
  void setUpdate(std::function<void(std::int64_t clock)> update) { update_ = std::move(update); }
  // Worker, before step c: waits for versions >= c - S (serving meanwhile) and takes the newest values.
  // Returns the staleness: c minus the oldest version of a shard the step uses.
  int beginStep(std::int64_t c);
  // Dedicated server: serves until clock c is applied and sent.
  void serve(std::int64_t c);
  // After the last step: every clock applied, every send done, every worker at the final version.
  void finish();
  // The step's communication as far as the engine sees it: the time it waited (for parameter versions, a
  // free gradient buffer, the workers' gradients), both communication and exposed. The transfers
  // themselves overlap the steps and are not timed one by one. Clears it.
  StepComm takeWaits();
  // What a worker sends per step: every shard of its gradient (and receives per version: the same size).
  std::size_t bytesPerStep() const;

 private:
  struct Peer;  // a point-to-point transfer and its buffer
  void pump();  // progresses both roles; never blocks
  void pumpWorker();
  void pumpServer();
  // Pumps until done() holds, or throws an Error naming what was awaited after the timeout.
  void pumpUntil(const std::function<bool()>& done, const char* what);
  // The one wait loop: `progress` between tests of `done` (MPI advances inside them), the core yielded after the
  // first spins, `timedOut()`'s message thrown past the timeout. Returns the seconds it waited.
  double spinUntil(const std::function<bool()>& done, const std::function<void()>& progress,
                   const std::function<std::string()>& timedOut) const;
  int serverRank(int shard) const { return dedicated_ ? workers_ + shard : shard; }
  void packGradients(int shard, float* out) const;
  void unpackValues(int shard, const float* in);
  void packValues(float* out) const;

  Communicator& comm_;
  Arena& arena_;
  int rank_, workers_, shards_, staleness_;
  bool dedicated_, worker_;
  int served_shard_ = -1;  // the shard this rank serves, -1 for none
  std::int64_t steps_;
  double timeoutS_;
  Buckets buckets_;
  std::vector<Tensor> values_;  // per bucket: the parameters' values, laid out as the bucket (they are views of it)
  std::vector<std::size_t> shardElements_;
  // Worker: the shard versions it holds, the values arriving, the gradients leaving (a ring of S + 2 clocks).
  std::vector<std::int64_t> version_;
  std::vector<std::unique_ptr<Peer>> valuesIn_;
  std::vector<std::vector<std::unique_ptr<Peer>>> gradsOut_;  // [clock % ring][shard]
  std::int64_t sentClocks_ = 0;
  // Server: each worker's gradient of the clock being served, the summed gradient (pieces' grads), the
  // values leaving (per worker), the clocks applied.
  std::vector<std::unique_ptr<Peer>> gradsIn_;
  std::vector<Tensor> shardGrads_;  // per bucket: the served chunk's summed gradient
  std::vector<Param> pieces_;
  std::vector<std::unique_ptr<Peer>> valuesOut_;
  std::int64_t served_ = 0;
  std::function<void(std::int64_t)> update_;
  double waitedS_ = 0;
};

}  // namespace ts::wl

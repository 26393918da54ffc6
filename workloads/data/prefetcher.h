#pragma once
// The loader thread: prepares the next `depth` batches while the model trains on the current one, so
// that the time the training loop spends waiting for data is its own phase (usually ~0) instead of
// hiding inside the step.
//
// Batches come out in step order: firstStep, firstStep+1, ... up to endStep (exclusive). An exception
// thrown while producing or preparing a batch is rethrown by the next() that would have returned that
// batch (earlier batches are still delivered first). The destructor stops and joins the thread; it waits
// for a batch being produced at that moment to finish, never for the queue to drain.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "workloads/data/batch.h"
#include "workloads/data/data_source.h"

namespace ts::data {

class Prefetcher {
 public:
  using Produce = std::function<Batch(std::int64_t step)>;
  // Runs in the loader thread on every batch after it is produced: the hook for staging it on the device
  // (pinned host copy, asynchronous copy on a side stream, an event; results go in Batch::staged).
  using Prepare = std::function<void(Batch&)>;

  static constexpr std::int64_t kNoEnd = std::numeric_limits<std::int64_t>::max();

  Prefetcher(Produce produce, std::int64_t firstStep, int depth = 2, Prepare prepare = {}, std::int64_t endStep = kNoEnd);
  // Batches of a data source (copied: it is a light handle on a shared dataset).
  Prefetcher(DataSource source, std::int64_t firstStep, int depth = 2, Prepare prepare = {}, std::int64_t endStep = kNoEnd);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  struct Next {
    Batch batch;
    double waitSeconds = 0;  // how long next() blocked: the step's data time
  };
  // The batch of the next step, blocking until it is ready. Error after endStep.
  Next next();
  // The step the next call to next() returns.
  std::int64_t nextStep() const { return consumed_; }

 private:
  void run();

  Produce produce_;
  Prepare prepare_;
  const std::int64_t firstStep_;
  const std::int64_t endStep_;
  const std::size_t depth_;
  std::int64_t consumed_;  // consumer side only

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  bool finished_ = false;  // the thread produced its last batch or failed
  std::thread thread_;     // last: started once everything above exists
};

}  // namespace ts::data

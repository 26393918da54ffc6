#include "workloads/data/prefetcher.h"

#include <chrono>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::data {

Prefetcher::Prefetcher(Produce produce, std::int64_t firstStep, int depth, Prepare prepare, std::int64_t endStep)
    : produce_(std::move(produce)),
      prepare_(std::move(prepare)),
      firstStep_(firstStep),
      endStep_(endStep),
      depth_(static_cast<std::size_t>(depth)),
      consumed_(firstStep) {
  if (depth < 1) throw UsageError(fmt::format("prefetch depth {} is below 1", depth));
  if (!produce_) throw Error("a prefetcher needs something to produce batches");
  thread_ = std::thread([this] { run(); });
}

Prefetcher::Prefetcher(DataSource source, std::int64_t firstStep, int depth, Prepare prepare, std::int64_t endStep)
    : Prefetcher([source = std::move(source)](std::int64_t step) { return source.batch(step); }, firstStep, depth,
                 std::move(prepare), endStep) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::run() {
  for (std::int64_t step = firstStep_; step < endStep_; ++step) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
      if (stop_) return;
    }
    // Produced outside the lock: the consumer keeps taking ready batches meanwhile.
    Batch b;
    try {
      b = produce_(step);
      if (prepare_) prepare_(b);
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      finished_ = true;
      changed_.notify_all();
      return;
    }
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(b));
    }
    changed_.notify_all();
  }
  std::lock_guard lock(mutex_);
  finished_ = true;
  changed_.notify_all();
}

Prefetcher::Next Prefetcher::next() {
  if (consumed_ >= endStep_) throw Error(fmt::format("no batch after the last step ({})", endStep_ - 1));
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    throw Error(fmt::format("the loader stopped before step {}", consumed_));
  }
  Next out;
  out.batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();  // room in the queue
  out.waitSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++consumed_;
  return out;
}

}  // namespace ts::data
